package wire

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/schemas"
)

// Header keys carried by every message besides the W3C trace context.
const (
	HeaderSchemaVersion = "schema-version"
	HeaderContentType   = "content-type"
)

// Topics names the pipeline's topics; names are configurable per deployment.
type Topics struct {
	Annotate    string // bags to annotate
	Train       string // weakly labeled bags for the retrainer
	Annotations string // annotation output, keyed by bag id
	DeadLetter  string // rejected input with the reason
}

// DefaultTopics returns the topic names used when none are configured.
func DefaultTopics() Topics {
	return Topics{Annotate: "bags", Train: "bags-train", Annotations: "annotations", DeadLetter: "dead-letters"}
}

// All lists the topic names.
func (t Topics) All() []string { return []string{t.Annotate, t.Train, t.Annotations, t.DeadLetter} }

// BagMessage is the wire form of a bag (schemas/bag.schema.json).
type BagMessage struct {
	SchemaVersion int    `json:"schema_version"`
	ID            string `json:"id"`
	Source        string `json:"source,omitempty"`
	Dim           int    `json:"dim"`
	// Instances (dense) and SparseInstances (each instance's non-zero
	// features) are the two encodings of the instances: a message has
	// exactly one of them non-nil. omitzero leaves out the nil one and
	// keeps an empty non-nil one, an empty bag (empty_bag, not schema).
	Instances       [][]float64     `json:"instances,omitzero"`
	SparseInstances []mil.SparseVec `json:"sparse_instances,omitzero"`
	Classes         []string        `json:"classes,omitempty"`
	// Labels uses omitzero, not omitempty: an empty non-nil set (a negative
	// bag) must survive the round trip, distinct from "unlabeled".
	Labels         []int `json:"labels,omitzero"`
	InstanceLabels []int `json:"instance_labels,omitempty"`
	// Media, Featurizer and Regions are a media bag's provenance
	// (provenance.go): absent on a bag of vectors from the sender.
	Media      *media.Media      `json:"media,omitempty"`
	Featurizer *media.Featurizer `json:"featurizer,omitempty"`
	Regions    []media.Region    `json:"regions,omitempty"`
}

// NewBagMessage wraps a bag of a dataset for the wire, sparse bags sparse.
// Instance labels are evaluation-only ground truth: they are sent only when
// withInstanceLabels.
func NewBagMessage(b *mil.Bag, source string, dim int, classes []string, withInstanceLabels bool) BagMessage {
	m := BagMessage{SchemaVersion: schemas.Version, ID: b.ID, Source: source, Dim: dim, Instances: b.Instances,
		SparseInstances: wireSparse(b.Sparse), Labels: b.Labels}
	if b.Labels != nil {
		m.Classes = classes
	}
	if withInstanceLabels {
		m.InstanceLabels = b.InstanceLabels
	}
	return m
}

// wireSparse returns the sparse instances as json.Marshal must see them:
// an instance without non-zeros (mil.SparseOf of a zero row has nil
// slices) with empty index and value arrays, since null is not an array
// to the schema. vs itself is returned when no instance needs it, as is
// the rule for bags loaded from files.
func wireSparse(vs []mil.SparseVec) []mil.SparseVec {
	k := slices.IndexFunc(vs, func(v mil.SparseVec) bool { return v.Idx == nil || v.Val == nil })
	if k < 0 {
		return vs
	}
	out := slices.Clone(vs)
	for i := k; i < len(out); i++ {
		if out[i].Idx == nil {
			out[i].Idx = []int32{}
		}
		if out[i].Val == nil {
			out[i].Val = []float64{}
		}
	}
	return out
}

// Bag returns the bag the message carries (sharing its slices), in the
// message's encoding: Sparse for a sparse message, Instances otherwise.
func (m *BagMessage) Bag() *mil.Bag {
	return &mil.Bag{ID: m.ID, Instances: m.Instances, Sparse: m.SparseInstances, Labels: m.Labels, InstanceLabels: m.InstanceLabels}
}

// AnnotationMessage is the wire form of an annotation
// (schemas/annotation.schema.json).
type AnnotationMessage struct {
	SchemaVersion int    `json:"schema_version"`
	BagID         string `json:"bag_id"`
	Source        string `json:"source,omitempty"`
	Model         string `json:"model"`
	ModelVersion  string `json:"model_version"`
	// ModelID is the version's registry id, unique forever (a ULID): the
	// display version vN restarts if the registry loses its data, the id
	// never does. Empty for versions stored before ids existed.
	ModelID        string      `json:"model_id,omitempty"`
	Mode           string      `json:"mode"`
	Classes        []string    `json:"classes"`
	InstanceLabels []int       `json:"instance_labels,omitempty"`
	InstanceScores [][]float64 `json:"instance_scores,omitempty"`
	BagLabels      []int       `json:"bag_labels"`
	BagScores      []float64   `json:"bag_scores"`
	LatencyMS      float64     `json:"latency_ms"`
	IngestedAt     *time.Time  `json:"ingested_at,omitempty"`
	AnnotatedAt    time.Time   `json:"annotated_at"`
	Annotator      string      `json:"annotator,omitempty"`
	// The annotated bag's provenance, as it came (provenance.go), so an
	// annotation names the photo and the regions its labels paint.
	Media      *media.Media      `json:"media,omitempty"`
	Featurizer *media.Featurizer `json:"featurizer,omitempty"`
	Regions    []media.Region    `json:"regions,omitempty"`
}

// MaxFeatureMagnitude bounds the absolute value of a feature. A finite
// feature beyond it is refused as non_finite, as NaN and ±Inf are: the
// models square features, sum them over instances and exponentiate
// weighted sums, and one feature of 1e308 in a training bag made every
// warm-started orlr refit fail ("bag label has zero probability"), after
// restarts too. 1e100 is far beyond any measured feature, and the square
// of a feature summed over any dimension a bag can have stays finite.
const MaxFeatureMagnitude = 1e100

// usable reports whether a feature is one the models can read: neither
// NaN nor ±Inf nor beyond MaxFeatureMagnitude. Every decoder and check of
// a bag's features asks it.
func usable(f float64) bool { return math.Abs(f) <= MaxFeatureMagnitude }

// unusable is the error of a feature usable refuses.
func unusable(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return mil.ErrNonFinite
	}
	return fmt.Errorf("magnitude beyond %g (wire.MaxFeatureMagnitude)", float64(MaxFeatureMagnitude))
}

// OutputKey is the Kafka key of a bag's outputs (its annotation, its dead
// letters): the bag's id, whatever key the bag arrived under, so that a
// compacted output topic keeps one record per bag and never gets a keyless
// record (which a broker refuses there). A message too broken to name its
// bag (bagID "") is keyed by where it lies: "topic/partition/offset".
func OutputKey(bagID, topic string, partition int, offset int64) []byte {
	if bagID != "" {
		return []byte(bagID)
	}
	return fmt.Appendf(nil, "%s/%d/%d", topic, partition, offset)
}

// Reason classifies why a message was dead-lettered.
type Reason string

// Dead-letter reasons (the enum of schemas/deadletter.schema.json).
const (
	ReasonMalformedJSON    Reason = "malformed_json"
	ReasonSchema           Reason = "schema"
	ReasonNonFinite        Reason = "non_finite"
	ReasonDimension        Reason = "dimension"
	ReasonEmptyBag         Reason = "empty_bag"
	ReasonLabelSetTooLarge Reason = "label_set_too_large"
	ReasonVocabulary       Reason = "vocabulary"
	ReasonLabels           Reason = "labels"
	ReasonOversize         Reason = "oversize"
	ReasonBadInput         Reason = "bad_input"
	// ReasonModelError: the model failed on a valid bag for a reason that
	// is not the input's (a bug); the bag is set aside so the stream moves on.
	ReasonModelError Reason = "model_error"
	// ReasonProduceRefused: the broker refused to store an output of the
	// message for good (an invalid record); the message is set aside so
	// its partition moves on.
	ReasonProduceRefused Reason = "produce_refused"
	// ReasonContentType: the content-type header names an encoding the
	// pipeline does not read (text/plain, say), or the value is not in
	// the encoding it names (JSON under the protobuf content type).
	ReasonContentType Reason = "content_type"
	// ReasonSchemaVersion: the schema-version header names a version this
	// build does not read.
	ReasonSchemaVersion Reason = "schema_version"
	// ReasonMedia: media that cannot be read: a corrupt or unsupported
	// image, or one whose header declares more pixels than the limit (a
	// decompression bomb); the error says which.
	ReasonMedia Reason = "media"
	// ReasonFeaturizer: a bag made by another featurizer than the model's
	// (media.Check).
	ReasonFeaturizer Reason = "featurizer"
)

// Reasons lists every dead-letter reason: the one list the schemas' reason
// enums, the services' metrics, the status page and the alert rules are
// held to (TestEnumerationsHaveOneSource and the tests it names).
func Reasons() []Reason {
	return []Reason{ReasonMalformedJSON, ReasonSchema, ReasonNonFinite, ReasonDimension, ReasonEmptyBag,
		ReasonLabelSetTooLarge, ReasonVocabulary, ReasonLabels, ReasonOversize, ReasonBadInput, ReasonModelError, ReasonProduceRefused,
		ReasonContentType, ReasonSchemaVersion, ReasonMedia, ReasonFeaturizer}
}

// Stages that dead-letter messages.
const (
	StageIngest   = "ingest"
	StageAnnotate = "annotate"
	// StageRetrain: a training bag the configured model kind can never be
	// fitted on.
	StageRetrain = "retrain"
)

// Stages lists every stage that dead-letters messages, as Reasons lists
// the reasons.
func Stages() []string { return []string{StageIngest, StageAnnotate, StageRetrain} }

// DeadLetter is the wire form of a rejected message
// (schemas/deadletter.schema.json). Original is base64 in JSON: the whole
// original message, or, when that would make the record too large to
// produce, a prefix of it (OriginalSize is then larger than Original, and
// OriginalSHA256 identifies the original, which Topic, Partition and Offset
// locate).
type DeadLetter struct {
	SchemaVersion int    `json:"schema_version"`
	Reason        Reason `json:"reason"`
	Error         string `json:"error"`
	Stage         string `json:"stage"`
	Key           string `json:"key,omitempty"`
	Topic         string `json:"topic,omitempty"`
	Partition     int    `json:"partition"`
	Offset        int64  `json:"offset"`
	Original      []byte `json:"original"`
	OriginalSize  int    `json:"original_size,omitempty"`
	// OriginalSHA256 is the hex SHA-256 of the whole original, set when
	// Original holds only a prefix.
	OriginalSHA256 string    `json:"original_sha256,omitempty"`
	At             time.Time `json:"at"`
}

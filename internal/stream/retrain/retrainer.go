package retrain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/admission"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/sample"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// RetrainStore is the part of the model registry the retrainer uses.
type RetrainStore interface {
	Current(ctx context.Context) ([]byte, featurestore.VersionMeta, error)
	// Alias and Get read current in two steps, so a refit knows which
	// version it compared its candidate with even when that version
	// cannot be read.
	Alias(ctx context.Context, alias string) (string, error)
	Get(ctx context.Context, version string) ([]byte, featurestore.VersionMeta, error)
	Put(ctx context.Context, blob []byte, meta featurestore.VersionMeta) (featurestore.VersionMeta, error)
	// Promote is featurestore.Registry.Promote: the contract guard, and
	// with IfCurrent a compare-and-set on the current version.
	Promote(ctx context.Context, version string, opts ...featurestore.PromoteOption) error
	// Prune deletes all but the newest keep versions, never one that an
	// alias or the rollback history refers to (featurestore.Registry.Prune).
	Prune(ctx context.Context, keep int) ([]string, error)
	// SetCandidate makes a version the candidate annotators run in shadow
	// (featurestore.Registry.SetCandidate).
	SetCandidate(ctx context.Context, version string) error
}

// RetrainerConfig configures the retrainer.
type RetrainerConfig struct {
	Brokers []string
	// Security secures the Kafka connections (zero: plaintext).
	Security kafkasec.Conn
	// Topic holds the weakly labeled bags.
	Topic string
	// DeadLetterTopic receives the training bags that can never be fitted
	// (stage retrain); empty: they are only logged.
	DeadLetterTopic string
	// MaxMessageBytes bounds the dead letters with the max.message.bytes
	// the broker reports for DeadLetterTopic (the smaller wins;
	// kafkaio.DefaultMaxMessageBytes when <= 0).
	MaxMessageBytes int
	Kinds           *models.Registry
	// Kind, Params and Seed say what to fit.
	Kind   string
	Params models.Params
	Seed   int64
	Store  RetrainStore
	// Window bounds the bags kept (the newest; a bag id seen again replaces
	// its older copy).
	Window int
	// WindowBytes bounds the memory the window's bags hold (their
	// features, labels and, until judged, their messages; bagBytes), the
	// oldest dropped first: bags of 1 MiB each would otherwise take a
	// window of Window bags past any container's limit, and the rebuild
	// after a restart would bring them back. <= 0: DefaultWindowBytes.
	WindowBytes int64
	// Every refits after this many new bags (0: never on count); Interval
	// refits on a schedule when new bags arrived (0: never on time).
	Every    int
	Interval time.Duration
	// MinBags is the smallest window worth fitting.
	MinBags int
	// HoldOut is the fraction of the window set aside (by a hash of the bag
	// id, so the same bags across refits) to compare candidate and current.
	HoldOut float64
	// Margin: promote when the candidate's held-out Hamming loss is at most
	// the current model's plus Margin.
	Margin float64
	// Warm starts the fit from the current model when it is of the same kind.
	Warm bool
	// KeepVersions bounds the registry, which otherwise grows by one
	// version per refit: after each refit, kept or promoted, versions
	// older than the newest KeepVersions are deleted, except those
	// current, previous, candidate or in the rollback history. 0 keeps
	// every version.
	KeepVersions int
	// Shadow publishes a fit that passes the held-out comparison as the
	// registry's "candidate" instead of promoting it: annotators run it
	// in shadow on live bags and promote it when its live quality is not
	// worse than current's (package quality). A first model, or one whose
	// current has another vocabulary or dimension (nothing to compare it
	// with on the same bags), is promoted as before.
	Shadow  bool
	Workers int
	// ReachCheck is how often the topic is checked for partitions added,
	// removed or replaced (follow.go) and its ends read for the
	// frozen-window check; <= 0: 10 s.
	ReachCheck time.Duration
	// FrozenAfter is how long the retrainer's position in a partition may
	// stay still while the partition ends beyond it, no refit running,
	// before Ready says the window is frozen (readiness.go); <= 0:
	// DefaultFrozenAfter.
	FrozenAfter time.Duration
	// RefitTimeout bounds one refit: a fit still running then is
	// cancelled and counted as failed (ErrRefitTimeout), and the window
	// moves on. <= 0: DefaultRefitTimeout.
	RefitTimeout time.Duration
	Obs          service.Observability
}

// Retrainer keeps a window of the training topic and refits, evaluates and
// promotes models.
type Retrainer struct {
	cfg RetrainerConfig

	validator *wire.Validator
	labelCap  int  // the kind's label cap under Params (0: none)
	noEmpty   bool // the kind cannot learn from an empty label set under Params
	// emptyOption is the kind's setting that makes empty label sets valid.
	emptyOption string
	dead        *kafkaio.Producer
	// deadQ, while Run runs, takes the dead letters of training messages
	// to the dead-letter writer, which writes them in batches while the
	// consumer goes on; track holds a message's offset back until its
	// dead letter is acknowledged.
	deadQ chan deadJob
	track *kafkaio.OffsetTracker

	// refitMu makes one refit at a time: two refits of one retrainer
	// compare with the same current, and only one may then promote.
	refitMu sync.Mutex
	// failing is the run of failed refits up to the last one (zero once a
	// refit succeeds), for Ready; under mu.
	failing struct {
		n     int
		since time.Time
		err   error
	}

	mu    sync.Mutex
	order []string // ids, oldest first
	// windowBytes is the sum of bagBytes over the window.
	windowBytes int64
	bags        map[string]windowBag
	fresh       int
	// changed says the window differs from the one the last refit took
	// (a new bag, a bag that changed, one evicted): new copies of the
	// same bags (a file ingested again) count as fresh but change
	// nothing, and refitting on them would store an identical version.
	changed bool
	last    []RefitResult
	// target is what a training bag must fit: the current model's
	// dimension and vocabulary, and the kind's label cap; nil until a
	// current model is known. targetAt is when it was last read.
	target   *admission.Target
	targetAt time.Time
	// fitted are the training offsets of the current model: rejections
	// below them were dead-lettered by an earlier run.
	fitted map[int]int64
	// excluded are the ids of the training bags refits isolated (the
	// current model's featurestore.VersionMeta.Excluded and this run's),
	// oldest first, at most maxExcluded.
	excluded []string

	refits   metric.Int64Counter
	fitTime  metric.Float64Histogram
	rejected metric.Int64Counter

	// registryDown is set while a registry operation keeps failing (Redis
	// unreachable), for Ready.
	registryDown atomic.Pointer[registryOutage]

	// running is set while Run consumes, rebuilt once the window has been
	// read up to where the topic ended at start (Ready).
	running, rebuilt atomic.Bool
	// follows are the partitions followed (follow.go).
	follows followState
}

// DefaultWindowBytes bounds the window's memory by default: 512 MiB,
// which leaves the fit's copies of the window (the training and held-out
// sets, a densified copy for a kind without a sparse path) room within the
// 4 GiB limit of the retrainer's manifest.
const DefaultWindowBytes = 512 << 20

// bagBytes is the memory a window bag holds: its features (8 bytes each,
// 12 with a sparse index), the slice headers of its rows, its labels, id
// and classes, and its message while it is kept.
func bagBytes(wb *windowBag) int64 {
	n := int64(96 + len(wb.bag.ID) + 8*len(wb.bag.Labels) + len(wb.raw))
	for _, x := range wb.bag.Instances {
		n += 24 + 8*int64(len(x))
	}
	for _, v := range wb.bag.Sparse {
		n += 48 + 12*int64(len(v.Idx))
	}
	for _, c := range wb.classes {
		n += 16 + int64(len(c))
	}
	return n
}

// putLocked puts wb in the window's map (not its order), replacing the
// bag of the same id, and counts its bytes; r.mu held.
func (r *Retrainer) putLocked(id string, wb windowBag) {
	if old, ok := r.bags[id]; ok {
		r.windowBytes -= bagBytes(&old)
	}
	r.bags[id] = wb
	r.windowBytes += bagBytes(&wb)
}

// dropLocked takes a bag out of the window's map (not its order) and its
// bytes out of the count; r.mu held.
func (r *Retrainer) dropLocked(id string) {
	if old, ok := r.bags[id]; ok {
		r.windowBytes -= bagBytes(&old)
		delete(r.bags, id)
	}
}

type windowBag struct {
	bag       mil.Bag
	classes   []string
	dim       int
	partition int
	offset    int64
	// featurizer made the bag's instances (nil: vectors from the sender).
	featurizer *media.Featurizer
	// judged: admitted against a known target. A bag admitted before any
	// model existed is checked again once one does; raw keeps its message
	// until then, for its dead letter.
	judged bool
	raw    []byte
}

// The results of a refit, the result attribute of the refits counter.
const (
	resultPromoted = "promoted"
	resultKept     = "kept"   // a candidate, not promoted
	resultFailed   = "failed" // no candidate: the refit failed
)

func refitAttrs(result string) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("result", result), attribute.Bool("promoted", result == resultPromoted))
}

// RefitResult describes one refit.
type RefitResult struct {
	At time.Time `json:"at"`
	// Error is why the refit failed ("" when it produced a candidate).
	Error string `json:"error,omitempty"`
	// Isolated are the training bags the fit failed on and succeeded
	// without: dead-lettered (stage retrain) and dropped from the window.
	Isolated []string `json:"isolated,omitempty"`
	Version  string   `json:"version,omitempty"`
	Parent   string   `json:"parent,omitempty"`
	Promoted bool     `json:"promoted"`
	// Shadowed: published as the candidate, for live judgement, instead
	// of being promoted.
	Shadowed       bool               `json:"shadowed,omitempty"`
	Reason         string             `json:"reason"`
	TrainBags      int                `json:"train_bags"`
	HeldOutBags    int                `json:"held_out_bags"`
	Candidate      map[string]float64 `json:"candidate"`
	Current        map[string]float64 `json:"current,omitempty"`
	FitTime        time.Duration      `json:"fit_time"`
	TrainingWindow string             `json:"training_window"`
	// Pruned lists the versions deleted from the registry after the
	// promotion, oldest first.
	Pruned []string `json:"pruned,omitempty"`
}

// NewRetrainer checks the configuration.
func NewRetrainer(cfg RetrainerConfig) (*Retrainer, error) {
	if len(cfg.Brokers) == 0 || cfg.Topic == "" || cfg.Kinds == nil || cfg.Store == nil {
		return nil, errors.New("retrainer: brokers, topic, model kinds and store are required")
	}
	if _, err := cfg.Kinds.Lookup(cfg.Kind); err != nil {
		return nil, fmt.Errorf("retrainer: %w", err)
	}
	if cfg.Window <= 0 {
		cfg.Window = 5000
	}
	if cfg.WindowBytes <= 0 {
		cfg.WindowBytes = DefaultWindowBytes
	}
	if cfg.ReachCheck <= 0 {
		cfg.ReachCheck = 10 * time.Second
	}
	if cfg.FrozenAfter <= 0 {
		cfg.FrozenAfter = DefaultFrozenAfter
	}
	if cfg.RefitTimeout <= 0 {
		cfg.RefitTimeout = DefaultRefitTimeout
	}
	if cfg.MinBags <= 0 {
		cfg.MinBags = 20
	}
	if cfg.HoldOut <= 0 || cfg.HoldOut >= 1 {
		cfg.HoldOut = 0.2
	}
	if cfg.Every <= 0 && cfg.Interval <= 0 {
		return nil, errors.New("retrainer: set a refit count (Every) or a schedule (Interval)")
	}
	if cfg.KeepVersions < 0 {
		return nil, fmt.Errorf("retrainer: KeepVersions %d < 0", cfg.KeepVersions)
	}
	cfg.Obs = cfg.Obs.WithDefaults()
	kind, _ := cfg.Kinds.Lookup(cfg.Kind)
	labelCap, err := admission.LabelCap(kind, cfg.Params)
	if err != nil {
		return nil, fmt.Errorf("retrainer: %w", err)
	}
	empty, err := admission.EmptyLabelSets(kind, cfg.Params)
	if err != nil {
		return nil, fmt.Errorf("retrainer: %w", err)
	}
	v, err := wire.NewValidator(0)
	if err != nil {
		return nil, err
	}
	r := &Retrainer{cfg: cfg, validator: v, labelCap: labelCap, noEmpty: !empty, emptyOption: kind.EmptyLabelSetsOption, bags: map[string]windowBag{}, track: kafkaio.NewOffsetTracker()}
	if err := r.initMetrics(); err != nil {
		return nil, fmt.Errorf("retrainer metrics: %w", err)
	}
	return r, nil
}

func (r *Retrainer) initMetrics() error {
	mt := r.cfg.Obs.Meter.Meter(service.Instrumentation)
	var errs []error
	var err error
	r.refits, err = mt.Int64Counter("mimlstream.retrainer.refits", metric.WithDescription("Refits, by result (promoted, kept: current stays, failed: no candidate) and whether promoted."))
	errs = append(errs, err)
	r.fitTime, err = mt.Float64Histogram("mimlstream.retrainer.fit_duration", metric.WithDescription("Time to fit a candidate."), metric.WithUnit("s"))
	errs = append(errs, err)
	r.rejected, err = mt.Int64Counter("mimlstream.retrainer.rejected_bags", metric.WithDescription("Training bags that can never be fitted, kept out of the window and dead-lettered, by reason."), metric.WithUnit("{bag}"))
	errs = append(errs, err)
	window, err := mt.Int64ObservableGauge("mimlstream.retrainer.window_bags", metric.WithDescription("Bags in the training window."))
	errs = append(errs, err)
	loss, err := mt.Float64ObservableGauge("mimlstream.retrainer.heldout_hamming_loss", metric.WithDescription("Held-out Hamming loss of the last candidate and of the model it was compared with."))
	errs = append(errs, err)
	frozen, err := mt.Int64ObservableGauge("mimlstream.retrainer.window_frozen",
		metric.WithDescription("1 while the training window cannot move (the training topic missing, or a partition ending beyond the retrainer's offset, unmoved for --frozen-after with no refit running; /readyz says which), else 0."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Counters exist from the start, every outcome and reason included, so
	// rates and alerts are defined before the first refit or rejection.
	ctx := context.Background()
	for _, res := range []string{resultPromoted, resultKept, resultFailed} {
		r.refits.Add(ctx, 0, refitAttrs(res))
	}
	for _, reason := range wire.Reasons() {
		r.rejected.Add(ctx, 0, metric.WithAttributes(attribute.String("reason", string(reason))))
	}
	_, err = mt.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(window, int64(r.Len()))
		stuck := int64(0)
		if _, ok := r.stalled(); ok {
			stuck = 1
		}
		o.ObserveInt64(frozen, stuck)
		res := r.Results()
		if len(res) == 0 {
			return nil
		}
		last := res[len(res)-1]
		if v, ok := last.Candidate[measure.HammingLoss]; ok {
			o.ObserveFloat64(loss, v, metric.WithAttributes(attribute.String("model", "candidate"), attribute.String("version", last.Version)))
		}
		if v, ok := last.Current[measure.HammingLoss]; ok {
			o.ObserveFloat64(loss, v, metric.WithAttributes(attribute.String("model", "current")))
		}
		return nil
	}, window, loss, frozen)
	return err
}

// Len returns the number of bags in the window.
func (r *Retrainer) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.order)
}

// Results returns the refits so far, oldest first.
func (r *Retrainer) Results() []RefitResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.last)
}

// add puts a training message into the window, unless it can never be
// fitted: undecodable, unlabeled, non-finite, or not what the model reads
// (dimension, vocabulary, the kind's label cap). Such a bag is
// dead-lettered with its reason, unless an earlier run already did
// (suppress), and never enters the window.
func (r *Retrainer) add(ctx context.Context, m kafka.Message) {
	// In the format the producer names (ingest --wire-format).
	bm, err := r.validator.DecodeBagHeaders(kafkaio.ContentType(m.Headers), kafkaio.SchemaVersion(m.Headers), m.Value)
	if err == nil && bm.Labels == nil {
		err = wire.Reject(wire.ReasonLabels, fmt.Errorf("training bag %q has no labels", bm.ID))
	}
	r.track.Add(m)
	r.mu.Lock()
	target := r.target
	if err == nil {
		// A bag a refit isolated, replayed by a rebuild: the version
		// fitted without it has seen it (its offset is below the fitted
		// ones); a later message under the same id is a new bag.
		if off, ok := r.fitted[m.Partition]; ok && m.Offset < off && slices.Contains(r.excluded, bm.ID) {
			err = wire.Reject(wire.ReasonBadInput, fmt.Errorf("training bag %q: isolated by an earlier refit (the fit failed on it)", bm.ID))
		}
	}
	r.mu.Unlock()
	if err == nil {
		err = r.check(ctx, target, bm)
	}
	if err != nil {
		id := ""
		var re *wire.RejectError
		switch {
		case bm != nil:
			id = bm.ID
		case errors.As(err, &re):
			id = re.BagID
		}
		if !r.reject(ctx, m, id, err, true) {
			r.track.Ack(m)
		}
		return
	}
	r.track.Ack(m)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.bags[bm.ID]; ok {
		r.order = slices.DeleteFunc(r.order, func(id string) bool { return id == bm.ID })
	}
	r.order = append(r.order, bm.ID)
	wb := windowBag{bag: *bm.Bag(), classes: bm.Classes, dim: bm.Dim, partition: m.Partition, offset: m.Offset, featurizer: bm.Featurizer, judged: r.target != nil}
	if !wb.judged {
		wb.raw = m.Value
	}
	if old, ok := r.bags[bm.ID]; !ok || !sameBag(&old, &wb) {
		r.changed = true
	}
	r.putLocked(bm.ID, wb)
	// The oldest go first; the newest stays even alone over the bytes.
	for len(r.order) > r.cfg.Window || (r.windowBytes > r.cfg.WindowBytes && len(r.order) > 1) {
		r.dropLocked(r.order[0])
		r.order = r.order[1:]
		r.changed = true
	}
	r.fresh++
}

// sameBag reports whether two window bags are the same training example:
// features, labels, classes and featurizer.
func sameBag(a, b *windowBag) bool {
	eq := func(x, y []float64) bool { return slices.Equal(x, y) }
	return a.dim == b.dim && slices.Equal(a.classes, b.classes) && slices.Equal(a.bag.Labels, b.bag.Labels) &&
		slices.EqualFunc(a.bag.Instances, b.bag.Instances, eq) &&
		slices.EqualFunc(a.bag.Sparse, b.bag.Sparse, func(x, y mil.SparseVec) bool {
			return slices.Equal(x.Idx, y.Idx) && slices.Equal(x.Val, y.Val)
		}) &&
		featurizerKey(a.featurizer) == featurizerKey(b.featurizer)
}

// check applies the target's checks to a decoded training bag (the label
// cap alone while no model is known). A bag of another dimension or
// vocabulary than the target first makes the retrainer re-read the current
// model, at most every 10 s, so a model promoted by hand for a new
// vocabulary is followed.
func (r *Retrainer) check(ctx context.Context, target *admission.Target, bm *wire.BagMessage) error {
	if target == nil {
		return admission.Target{Model: "kind " + r.cfg.Kind, Dim: bm.Dim, Classes: bm.Classes, MaxLabels: r.labelCap, NoEmptyLabels: r.noEmpty, EmptyLabelsOption: r.emptyOption}.Check(bm)
	}
	err := target.Check(bm)
	if reason, _ := admission.Reason(err); reason != wire.ReasonDimension && reason != wire.ReasonVocabulary {
		return err
	}
	r.mu.Lock()
	stale := time.Since(r.targetAt) > 10*time.Second
	r.mu.Unlock()
	if !stale {
		return err
	}
	if _, ok := r.readCurrent(ctx, 2*time.Second); !ok {
		return err
	}
	r.mu.Lock()
	target = r.target
	r.mu.Unlock()
	return target.Check(bm)
}

// reject dead-letters a training message that can never be fitted. With
// replayed, a message below the current model's training offsets is only
// logged: the run that fitted the model read it and dead-lettered it. A
// replayed message's dead letter goes to the dead-letter writer while Run
// runs: reject then returns true, and the writer acknowledges the message
// to the offset tracker once its dead letter is acknowledged.
// The dead letter is keyed by id, the bag's ("" when the message names
// none: wire.OutputKey).
func (r *Retrainer) reject(ctx context.Context, m kafka.Message, id string, err error, replayed bool) (queued bool) {
	reason, ok := admission.Reason(err)
	if !ok {
		reason = wire.ReasonBadInput
	}
	r.rejected.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", string(reason))))
	r.mu.Lock()
	fitted, seen := r.fitted[m.Partition]
	r.mu.Unlock()
	log := r.cfg.Obs.Logger.With("partition", m.Partition, "offset", m.Offset, "key", string(m.Key), "reason", reason, "err", err)
	if replayed && seen && m.Offset < fitted {
		log.Debug("training bag kept out of the window (dead-lettered by an earlier run)")
		return false
	}
	if r.dead == nil {
		log.Warn("training bag kept out of the window: it can never be fitted")
		return false
	}
	h := kafkaio.WithOriginal(kafkaio.Headers(ctx, r.cfg.Obs.Propagator), kafkaio.ContentType(m.Headers))
	value := wire.NewDeadLetter(wire.StageRetrain, reason, err, string(m.Key), m.Topic, m.Partition, m.Offset, m.Value).Encode(r.dead.ValueBudget(m.Key, h))
	job := r.deadJobFor(m)
	job.out, job.log = kafka.Message{Topic: r.cfg.DeadLetterTopic, Key: wire.OutputKey(id, m.Topic, m.Partition, m.Offset), Value: value, Headers: h}, log
	if replayed && r.deadQ != nil {
		select {
		case r.deadQ <- job:
			return true
		case <-ctx.Done():
			log.Warn("training bag kept out of the window; its dead letter was not written", "write_err", ctx.Err())
			return true // not acknowledged: a restart reads it again
		}
	}
	r.writeDeadLetters(ctx, []deadJob{job})
	return false
}

// deadJob is the dead letter of a training message.
type deadJob struct {
	in, out kafka.Message
	log     *slog.Logger
	// gen is the generation of in's partition follower (follow.go).
	gen int
}

// writeDeadLetters writes dead letters, waits for their acknowledgement
// and logs the outcome of each; it returns the jobs whose dead letter is
// out (written, or refused for good: retrying cannot help).
func (r *Retrainer) writeDeadLetters(ctx context.Context, jobs []deadJob) []deadJob {
	out := make([]kafka.Message, len(jobs))
	for i, j := range jobs {
		out[i] = j.out
	}
	refused, werr := r.dead.Write(ctx, out)
	if werr != nil {
		for _, j := range jobs {
			j.log.Warn("training bag kept out of the window; its dead letter was not written", "write_err", werr)
		}
		return nil
	}
	why := make(map[int]error, len(refused))
	for _, rf := range refused {
		why[rf.Index] = rf.Err
	}
	for i, j := range jobs {
		if e, ok := why[i]; ok {
			j.log.Error("training bag kept out of the window; its dead letter was refused", "write_err", e)
		} else {
			j.log.Warn("training bag dead-lettered: it can never be fitted")
		}
	}
	return jobs
}

// deadLetterWriter writes the queued dead letters, as many at a time as
// are queued, until deadQ is closed, and acknowledges their messages to
// the offset tracker. One writer keeps the dead letters in arrival order.
func (r *Retrainer) deadLetterWriter(ctx context.Context) {
	for job := range r.deadQ {
		jobs := []deadJob{job}
	more:
		for len(jobs) < 256 {
			select {
			case j, ok := <-r.deadQ:
				if !ok {
					break more
				}
				jobs = append(jobs, j)
			default:
				break more
			}
		}
		for _, j := range r.writeDeadLetters(ctx, jobs) {
			r.ackDeadLetter(j)
		}
	}
}

// nextOffsets returns, per partition, the offset after the longest prefix
// of the messages read whose handling is complete (in the window, or
// dead-lettered and acknowledged): what a version fitted now has seen.
func (r *Retrainer) nextOffsets() map[int]int64 {
	out := map[int]int64{}
	for _, m := range r.track.Committable() {
		out[m.Partition] = m.Offset + 1
	}
	return out
}

// readCurrent reads the current model's metadata within timeout and makes
// it the target. It returns the metadata and true when the registry
// answered (a zero meta when there is no current model or it is corrupt).
func (r *Retrainer) readCurrent(ctx context.Context, timeout time.Duration) (featurestore.VersionMeta, bool) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, meta, err := r.cfg.Store.Current(rctx)
	switch {
	case err == nil:
	case errors.Is(err, featurestore.ErrNotFound):
		meta = featurestore.VersionMeta{}
	case errors.Is(err, featurestore.ErrCorrupt):
		// Replaced by the next refit; nothing to check against meanwhile.
		r.cfg.Obs.Logger.Warn("current model unreadable; training bags are checked against the kind only", "err", err)
		meta = featurestore.VersionMeta{}
	default:
		r.cfg.Obs.Logger.Warn("model registry unavailable; could not read the current model", "err", err)
		r.registryFailing("read current model", err)
		return featurestore.VersionMeta{}, false
	}
	r.registryDown.Store(nil)
	r.deadLetterUnfit(ctx, r.setCurrent(meta))
	return meta, true
}

// setCurrent makes meta (the current model's; zero when none) the target
// and its training offsets the fitted ones. Window bags admitted before any
// target existed that do not fit the new one are dead-lettered then; bags
// admitted under an older target (another vocabulary, say) are dropped
// quietly: they were valid for the model of their time.
func (r *Retrainer) setCurrent(meta featurestore.VersionMeta) []windowBag {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.targetAt = time.Now()
	if meta.Version == "" {
		return nil
	}
	r.fitted = meta.TrainOffsets
	for _, id := range meta.Excluded {
		if !slices.Contains(r.excluded, id) {
			r.excluded = append(r.excluded, id)
		}
	}
	r.excluded = r.excluded[max(0, len(r.excluded)-maxExcluded):]
	f := meta.FeaturizerOrZero()
	t := &admission.Target{Model: "model " + meta.Version, Dim: meta.Dim, Classes: meta.Classes, Implicit: meta.ImplicitClasses,
		MaxLabels: r.labelCap, NoEmptyLabels: r.noEmpty, EmptyLabelsOption: r.emptyOption, Featurizer: &f}
	r.target = t
	var unfit []windowBag
	r.order = slices.DeleteFunc(r.order, func(id string) bool {
		wb := r.bags[id]
		bm := &wire.BagMessage{ID: id, Dim: wb.dim, Classes: wb.classes, Labels: wb.bag.Labels, Featurizer: wb.featurizer}
		if t.Check(bm) == nil {
			if !wb.judged {
				wb.judged, wb.raw = true, nil
				r.putLocked(id, wb)
			}
			return false
		}
		if !wb.judged {
			unfit = append(unfit, wb)
		}
		r.dropLocked(id)
		return true
	})
	return unfit
}

// Run rebuilds the window from the topic, then follows it and refits until
// ctx ends; it then returns nil. The rebuild refits nothing: once every
// partition has been read up to where it ended at start, the retrainer
// refits once if the window holds enough bags beyond the training offsets
// of the current model (a first model, or Every new bags), so a restart
// over a full topic costs at most one refit. A partition follower that
// cannot start stops it with the error (a transient read error is retried).
func (r *Retrainer) Run(ctx context.Context) error {
	log := r.cfg.Obs.Logger
	if r.cfg.DeadLetterTopic != "" {
		limit, err := kafkaio.MaxMessageBytes(ctx, r.cfg.Brokers, r.cfg.Security, r.cfg.MaxMessageBytes, r.cfg.DeadLetterTopic)
		if err != nil {
			log.Warn("the cluster does not report the dead-letter topic's max.message.bytes; keeping to the configured limit", "limit", limit, "err", err)
		}
		r.dead = kafkaio.NewProducer(kafkaio.ProducerConfig{Brokers: r.cfg.Brokers, Security: r.cfg.Security, MaxMessageBytes: limit, Logger: log})
		defer r.dead.Close()
		r.deadQ = make(chan deadJob, 256)
		var writer sync.WaitGroup
		writer.Go(func() { r.deadLetterWriter(ctx) })
		// After the consumer stops (deferred calls run last first): no
		// more jobs, and the queued ones are written or given up with ctx.
		defer writer.Wait()
		defer close(r.deadQ)
	}
	// The target and the fitted offsets before the rebuild, so it neither
	// admits what the model cannot read nor dead-letters again what an
	// earlier run did. Redis down: the rebuild goes on without them.
	r.readCurrent(ctx, 2*time.Second)
	starts, ends, err := r.startOffsets(ctx)
	if err != nil {
		return err
	}
	log.Info("retrainer rebuilding its window", "topic", r.cfg.Topic, "partitions", len(starts), "window", r.cfg.Window)
	r.running.Store(true)
	defer r.running.Store(false)
	return r.followTopic(ctx, starts, ends)
}

// Ready reports whether the retrainer follows its topic with a rebuilt
// window (so its next refit sees all the data), and why not otherwise: the
// /readyz body.
func (r *Retrainer) Ready() (bool, string) {
	if !r.running.Load() {
		return false, "not ready: not consuming " + r.cfg.Topic
	}
	// A window that cannot move (stalled, readiness.go) says why before a
	// rebuild that would never end does.
	if why, stuck := r.stalled(); stuck {
		return false, "not ready: " + why
	}
	if !r.rebuilt.Load() {
		return false, fmt.Sprintf("not ready: rebuilding the window from %s (%d bags so far)", r.cfg.Topic, r.Len())
	}
	if o := r.registryDown.Load(); o != nil {
		return false, fmt.Sprintf("not ready: model registry unavailable for %v (%s): %v", time.Since(o.since).Round(time.Second), o.what, o.err)
	}
	r.mu.Lock()
	failing := r.failing
	r.mu.Unlock()
	if failing.n > 0 {
		return false, fmt.Sprintf("not ready: refit failed (%d in a row since %s; /refits has each error): %v",
			failing.n, failing.since.Format(time.RFC3339), failing.err)
	}
	return true, fmt.Sprintf("ok: following %s, window of %d bags", r.cfg.Topic, r.Len())
}

// caughtUp ends the rebuild: the bags beyond the current model's training
// offsets are the fresh ones, and they are refitted on at once if there is
// no model yet or they are Every or more.
func (r *Retrainer) caughtUp(ctx context.Context) {
	meta, known := r.readCurrent(ctx, 5*time.Second)
	r.mu.Lock()
	fresh := 0
	for _, id := range r.order {
		wb := r.bags[id]
		if off, ok := meta.TrainOffsets[wb.partition]; !ok || wb.offset >= off {
			fresh++
		}
	}
	r.fresh = fresh
	n := len(r.order)
	r.mu.Unlock()
	first := known && meta.Version == ""
	refit := fresh > 0 && n >= r.cfg.MinBags && (first || (r.cfg.Every > 0 && fresh >= r.cfg.Every))
	r.cfg.Obs.Logger.Info("window rebuilt", "bags", n, "new_since_current_model", fresh, "current", meta.Version, "refit", refit)
	if refit {
		r.refitLogged(ctx)
	}
}

// deadLetterUnfit dead-letters window bags that a newly known model cannot
// read.
func (r *Retrainer) deadLetterUnfit(ctx context.Context, unfit []windowBag) {
	r.mu.Lock()
	t := r.target
	r.mu.Unlock()
	for _, wb := range unfit {
		err := t.Check(&wire.BagMessage{ID: wb.bag.ID, Dim: wb.dim, Classes: wb.classes, Labels: wb.bag.Labels, Featurizer: wb.featurizer})
		r.reject(ctx, kafka.Message{Topic: r.cfg.Topic, Key: []byte(wb.bag.ID), Partition: wb.partition, Offset: wb.offset, Value: wb.raw}, wb.bag.ID, err, false)
	}
}

func (r *Retrainer) freshCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fresh
}

func (r *Retrainer) refitLogged(ctx context.Context) {
	r.mu.Lock()
	unchanged := !r.changed && len(r.last) > 0 && r.failing.n == 0
	if unchanged {
		// The fresh bags are copies of bags the last refit had: the fit
		// would be the last one again. Counted as seen; no version.
		fresh := r.fresh
		r.fresh = 0
		r.mu.Unlock()
		r.cfg.Obs.Logger.Info("no refit: the window is the one the last refit took", "new_copies", fresh)
		return
	}
	r.mu.Unlock()
	res, err := r.Refit(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Obs.Logger.Error("refit failed", "err", err)
		}
		return
	}
	r.cfg.Obs.Logger.Info("refit", "version", res.Version, "promoted", res.Promoted, "reason", res.Reason,
		"train_bags", res.TrainBags, "held_out", res.HeldOutBags, "candidate_hamming", res.Candidate[measure.HammingLoss],
		"current_hamming", res.Current[measure.HammingLoss], "fit_time", res.FitTime.Round(time.Millisecond))
}

// heldOut reports whether a bag belongs to the held-out slice.
func heldOut(id string, frac float64) bool { return sample.Unit("holdout", id) < frac }

// snapshot returns the window as train and held-out datasets over the
// target's dimension and vocabulary, or, before any model is known, those
// of most of the window's bags (the newest bag's on a tie); bags over
// another vocabulary or dimension are left out. offsets are the next
// offsets of the partitions read so far.
func (r *Retrainer) snapshot() (train, test *mil.Dataset, featurizer *media.Featurizer, window string, offsets map[int]int64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) == 0 {
		return nil, nil, nil, "", nil, errors.New("empty window")
	}
	var dim int
	var classes []string
	if r.target != nil {
		// The data's vocabulary: a model's implicit classes (orlr's
		// "unknown") are its own, added again by the fit.
		dim, classes = r.target.Dim, r.target.DataClasses()
		if f := r.target.Featurizer; f != nil && !f.IsZero() {
			featurizer = f
		}
	} else {
		// No model yet: the input contract (dimension, vocabulary,
		// featurizer) most of the window has, the newest bag's on ties.
		votes := map[string]int{}
		best := -1
		for i := len(r.order) - 1; i >= 0; i-- {
			wb := r.bags[r.order[i]]
			k := fmt.Sprintf("%d %q %s", wb.dim, wb.classes, featurizerKey(wb.featurizer))
			votes[k]++
			if votes[k] > best {
				best, dim, classes, featurizer = votes[k], wb.dim, wb.classes, wb.featurizer
			}
		}
	}
	train = &mil.Dataset{Name: r.cfg.Topic, Classes: classes, Dim: dim}
	test = &mil.Dataset{Name: r.cfg.Topic + "-heldout", Classes: classes, Dim: dim}
	for _, id := range r.order {
		wb := r.bags[id]
		if wb.dim != dim || !slices.Equal(wb.classes, classes) || featurizerKey(wb.featurizer) != featurizerKey(featurizer) {
			continue
		}
		if heldOut(id, r.cfg.HoldOut) {
			test.Bags = append(test.Bags, wb.bag)
		} else {
			train.Bags = append(train.Bags, wb.bag)
		}
	}
	offsets = r.nextOffsets()
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		parts = append(parts, fmt.Sprintf("%d:%d", p, offsets[p]))
	}
	window = fmt.Sprintf("topic %s, %d bags, next offsets %s", r.cfg.Topic, len(r.order), strings.Join(parts, ","))
	r.fresh, r.changed = 0, false
	return train, test, featurizer, window, offsets, nil
}

// featurizerKey names a bag's featurizer ("" for vectors from the sender).
func featurizerKey(f *media.Featurizer) string {
	if f == nil || f.IsZero() {
		return ""
	}
	return f.String()
}

// Refit fits a candidate on the window, compares it with the current model
// on the held-out slice, stores it with its metrics, and promotes it when it
// is not worse than the current one by more than the margin. Registry
// operations are retried while Redis is down. A training bag the fit fails
// on and succeeds without is dead-lettered and dropped from the window
// (isolate). Every refit is recorded (Results, the refits counter by
// result); a failed one with its error, and Ready reports failing refits
// until one succeeds.
func (r *Retrainer) Refit(ctx context.Context) (RefitResult, error) {
	r.refitMu.Lock()
	defer r.refitMu.Unlock()
	fitCtx, cancel := context.WithTimeoutCause(ctx, r.cfg.RefitTimeout,
		fmt.Errorf("%w: still running after %v", ErrRefitTimeout, r.cfg.RefitTimeout))
	defer cancel()
	r.refitting(true)
	res, err := (&refit{r: r}).run(fitCtx)
	r.refitting(false)
	res.At = time.Now().UTC()
	if err != nil && ctx.Err() != nil {
		return res, err // shutting down: not a failure of the refit
	}
	if err != nil && fitCtx.Err() != nil {
		// The fit says "context deadline exceeded"; the cause says why.
		err = fmt.Errorf("%w (%w)", context.Cause(fitCtx), err)
	}
	result := resultKept
	switch {
	case err != nil:
		result, res.Promoted, res.Error = resultFailed, false, err.Error()
		res.Reason = "refit failed: " + res.Error
	case res.Promoted:
		result = resultPromoted
	}
	r.mu.Lock()
	r.last = append(r.last, res)
	if err != nil {
		if r.failing.n == 0 {
			r.failing.since = res.At
		}
		r.failing.n++
		r.failing.err = err
	} else {
		r.failing.n, r.failing.err = 0, nil
	}
	r.mu.Unlock()
	r.refits.Add(ctx, 1, refitAttrs(result))
	if err == nil {
		r.fitTime.Record(ctx, res.FitTime.Seconds())
	}
	return res, err
}

// maxIsolated bounds the bags one refit may isolate: beyond a few, the
// fault is more likely the model's or the data's as a whole than a bag's.
const maxIsolated = 3

// maxExcluded bounds the isolated bag ids remembered (Retrainer.excluded,
// featurestore.VersionMeta.Excluded).
const maxExcluded = 256

// isolate is called after the fit of train failed with fitErr. It looks
// for a bag that the fit fails on with the same error (culprit), drops it
// from train and fits again, up to maxIsolated bags; it returns the model
// and the bags dropped (train then holds the others) once a fit succeeds.
// When no single bag reproduces the failure, or the fit still fails, it
// returns the last fit error and leaves train as it was.
func isolate(ctx context.Context, kind models.Kind, train *mil.Dataset, opt models.FitOptions, fitErr error) (models.Model, []isolatedBag, error) {
	orig := train.Bags
	var dropped []isolatedBag
	for range maxIsolated {
		i, ok := culprit(ctx, kind, train, opt, fitErr)
		if !ok {
			break
		}
		dropped = append(dropped, isolatedBag{id: train.Bags[i].ID, err: fitErr})
		train.Bags = slices.Delete(slices.Clone(train.Bags), i, i+1)
		m, err := kind.Fit(ctx, train, opt)
		if err == nil {
			return m, dropped, nil
		}
		fitErr = err
		if ctx.Err() != nil {
			break
		}
	}
	train.Bags = orig
	return nil, nil, fitErr
}

// isolatedBag is a training bag the fit failed on, with the fit's error.
type isolatedBag struct {
	id  string
	err error
}

// culprit bisects train for a bag the fit fails on: of the two halves of
// the bags left, it keeps one whose fit fails with fitErr's message, down
// to one bag. The same message, not any error, so that a half too small
// or too uniform to fit for its own reasons is not blamed. It costs about
// two fits of the window at most; ok is false when neither half fails so
// (the failure needs bags from both: no single culprit).
func culprit(ctx context.Context, kind models.Kind, train *mil.Dataset, opt models.FitOptions, fitErr error) (int, bool) {
	fails := func(lo, hi int) bool {
		sub := *train
		sub.Bags = train.Bags[lo:hi]
		_, err := kind.Fit(ctx, &sub, opt)
		return err != nil && err.Error() == fitErr.Error()
	}
	lo, hi := 0, len(train.Bags)
	for hi-lo > 1 && ctx.Err() == nil {
		mid := lo + (hi-lo)/2
		switch {
		case fails(lo, mid):
			hi = mid
		case fails(mid, hi):
			lo = mid
		default:
			return 0, false
		}
	}
	return lo, hi-lo == 1 && ctx.Err() == nil
}

// dropIsolated takes bags the fit failed on out of the window and
// dead-letters them (stage retrain, bad_input, the fit's error): they stop
// breaking refits, and the restarted retrainer's rebuild, which replays
// the topic, does not take them back below the next version's offsets.
func (r *Retrainer) dropIsolated(ctx context.Context, bags []isolatedBag) {
	for _, b := range bags {
		r.mu.Lock()
		wb, ok := r.bags[b.id]
		if ok {
			r.dropLocked(b.id)
			r.order = slices.DeleteFunc(r.order, func(id string) bool { return id == b.id })
		}
		r.mu.Unlock()
		if !ok {
			continue
		}
		value := wb.raw
		if value == nil {
			// The window keeps the decoded bag, not its bytes: the dead
			// letter holds it re-encoded.
			value, _ = json.Marshal(wire.NewBagMessage(&wb.bag, r.cfg.Topic, wb.dim, wb.classes, false))
		}
		r.mu.Lock()
		r.excluded = append(r.excluded, b.id)
		r.excluded = r.excluded[max(0, len(r.excluded)-maxExcluded):]
		r.mu.Unlock()
		err := wire.Reject(wire.ReasonBadInput, fmt.Errorf("training bag %q: the fit fails with it and succeeds without it: %w", b.id, b.err))
		r.reject(ctx, kafka.Message{Topic: r.cfg.Topic, Key: []byte(b.id), Partition: wb.partition, Offset: wb.offset, Value: value}, b.id, err, false)
	}
}

// prune bounds the registry after a promotion. It is housekeeping: a
// failure is logged, not retried (the next promotion prunes again) and does
// not fail the refit, whose model is already stored and served.
func (r *Retrainer) prune(ctx context.Context) []string {
	if r.cfg.KeepVersions == 0 {
		return nil
	}
	pruned, err := r.cfg.Store.Prune(ctx, r.cfg.KeepVersions)
	if err != nil {
		r.cfg.Obs.Logger.Warn("prune model registry", "keep", r.cfg.KeepVersions, "err", err)
		return nil
	}
	if len(pruned) > 0 {
		r.cfg.Obs.Logger.Info("pruned model registry", "keep", r.cfg.KeepVersions, "deleted", pruned)
	}
	return pruned
}

// Evaluate annotates the bags of test inductively (their labels hidden) and
// returns the bag measures (and instance accuracy when the bags carry
// instance labels).
func Evaluate(ctx context.Context, m models.Model, test *mil.Dataset) (map[string]float64, error) {
	bags := make([]*mil.Bag, len(test.Bags))
	for i := range test.Bags {
		bags[i] = &test.Bags[i]
	}
	// One worker: the bags are annotated in order, as before the loop was
	// shared with the evaluation harness.
	preds, err := measure.Predict(ctx, m, bags, models.Inductive, 1)
	if err != nil {
		return nil, err
	}
	res, err := measure.Score(len(test.Classes), bags, preds)
	if err != nil {
		return nil, err
	}
	out := res.Values()
	if _, ok := out[measure.HammingLoss]; !ok {
		return nil, errors.New("no labeled bag to evaluate on")
	}
	return out, nil
}

// registryOutage is a registry operation failing since a time.
type registryOutage struct {
	what  string
	err   error
	since time.Time
}

// retryRegistry is retry for the model registry's operations: while they
// fail, Ready says the registry is unavailable.
func (r *Retrainer) retryRegistry(ctx context.Context, what string, fn func() error) error {
	err := retry(ctx, r.cfg.Obs, what, func() error {
		err := fn()
		if err != nil {
			r.registryFailing(what, err)
		}
		return err
	})
	r.registryDown.Store(nil)
	return err
}

// registryFailing records a failing registry operation, keeping the start
// of the outage.
func (r *Retrainer) registryFailing(what string, err error) {
	since := time.Now()
	if o := r.registryDown.Load(); o != nil {
		since = o.since
	}
	r.registryDown.Store(&registryOutage{what: what, err: err, since: since})
}

// retry runs fn until it succeeds, ctx ends, or it fails with an error
// that retrying cannot fix (a corrupt blob). It backs off up to 5 s and
// logs each failure: a Redis outage makes the retrainer wait, not exit.
func retry(ctx context.Context, obs service.Observability, what string, fn func() error) error {
	backoff := 100 * time.Millisecond
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if errors.Is(err, featurestore.ErrCorrupt) || errors.Is(err, models.ErrBadInput) ||
			errors.Is(err, featurestore.ErrCurrentChanged) || errors.Is(err, featurestore.ErrIncompatible) {
			// Answers, not outages: asking again gives the same one.
			return fmt.Errorf("%s: %w", what, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		}
		obs.Logger.Warn(what+" failed; retrying", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(time.Duration(math.Round(float64(backoff)*1.6)), 5*time.Second)
	}
}

// MarshalJSON renders durations in seconds.
func (r RefitResult) MarshalJSON() ([]byte, error) {
	type alias RefitResult
	return json.Marshal(struct {
		alias
		FitTime float64 `json:"fit_time"`
	}{alias(r), r.FitTime.Seconds()})
}

package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/schemas"
)

// RejectError is an input error with its dead-letter reason. Retrying the
// message cannot succeed.
type RejectError struct {
	Reason Reason
	Err    error
}

func (e *RejectError) Error() string { return string(e.Reason) + ": " + e.Err.Error() }
func (e *RejectError) Unwrap() error { return e.Err }

// Reject returns err as an input error with its dead-letter reason.
func Reject(r Reason, err error) *RejectError { return &RejectError{Reason: r, Err: err} }

// ReasonOf classifies an error: a RejectError keeps its reason; the mil
// input errors map to theirs; anything else is not an input error of the
// wire format (ok false). The annotator adds the model contract's input
// errors on top (annotate.reasonOf); this package does not depend on the
// models, so ingest links none of their code.
func ReasonOf(err error) (Reason, bool) {
	var re *RejectError
	switch {
	case err == nil:
		return "", false
	case errors.As(err, &re):
		return re.Reason, true
	case errors.Is(err, mil.ErrEmptyBag):
		return ReasonEmptyBag, true
	case errors.Is(err, mil.ErrDimension):
		return ReasonDimension, true
	case errors.Is(err, mil.ErrNonFinite):
		return ReasonNonFinite, true
	case errors.Is(err, mil.ErrLabelRange), errors.Is(err, mil.ErrLabelOrder), errors.Is(err, mil.ErrInstanceMeta):
		return ReasonLabels, true
	}
	return "", false
}

// Validator checks raw messages against the schemas and the bag invariants.
// It is immutable and safe for concurrent use.
type Validator struct {
	schemas  *schemas.Set
	maxBytes int
}

// NewValidator compiles the embedded schemas. maxBytes <= 0 disables the
// size limit.
func NewValidator(maxBytes int) (*Validator, error) {
	s, err := schemas.Compile()
	if err != nil {
		return nil, err
	}
	return &Validator{schemas: s, maxBytes: maxBytes}, nil
}

// Schemas returns the compiled schemas.
func (v *Validator) Schemas() *schemas.Set { return v.schemas }

// DecodeBag validates raw bytes as a bag message. Errors are *RejectError.
// The checks run from the cheapest and most specific to the most general, so
// the reason names the actual fault (an empty bag is "empty_bag", not a
// generic schema violation; "NaN" as a string is "non_finite").
func (v *Validator) DecodeBag(raw []byte) (*BagMessage, error) {
	if v.maxBytes > 0 && len(raw) > v.maxBytes {
		return nil, Reject(ReasonOversize, fmt.Errorf("message of %d bytes exceeds the %d-byte limit", len(raw), v.maxBytes))
	}
	doc, err := decodeDocument(raw)
	if err != nil {
		return nil, Reject(ReasonMalformedJSON, err)
	}
	instances, err := precheck(doc)
	if err != nil {
		return nil, err
	}
	if err := v.schemas.Bag.Validate(doc); err != nil {
		return nil, Reject(ReasonSchema, flattenSchemaError(err))
	}
	// The document is already parsed and its shape checked: build the
	// message from it rather than parsing the bytes a second time.
	m, err := bagFromDoc(doc.(map[string]any), instances)
	if err != nil {
		// Only a value the Go types cannot hold remains (an integer
		// overflowing int, say).
		return nil, Reject(ReasonSchema, err)
	}
	if err := m.Bag().Validate(m.Dim, len(m.Classes)); err != nil {
		r, _ := ReasonOf(err)
		return nil, Reject(r, err)
	}
	if m.Labels != nil && len(m.Classes) == 0 {
		return nil, Reject(ReasonLabels, errors.New("labels without a class vocabulary"))
	}
	return m, nil
}

// bagFromDoc converts a document that passed the bag schema; instances are
// its feature vectors as precheck converted them. Strings are cloned: they
// are substrings of the whole message, which a retrainer window would
// otherwise keep alive.
func bagFromDoc(obj map[string]any, instances [][]float64) (*BagMessage, error) {
	if instances == nil {
		// precheck converts every instance the schema accepts.
		return nil, errors.New("instances: not arrays of numbers")
	}
	m := &BagMessage{Instances: instances}
	var err error
	if m.SchemaVersion, err = toInt(obj["schema_version"]); err != nil {
		return nil, fmt.Errorf("schema_version: %w", err)
	}
	id, _ := obj["id"].(string)
	source, _ := obj["source"].(string)
	m.ID, m.Source = strings.Clone(id), strings.Clone(source)
	if m.Dim, err = toInt(obj["dim"]); err != nil {
		return nil, fmt.Errorf("dim: %w", err)
	}
	if cs, ok := obj["classes"].([]any); ok {
		m.Classes = make([]string, len(cs))
		for i, c := range cs {
			s, _ := c.(string)
			m.Classes[i] = strings.Clone(s)
		}
	}
	// Absent and null labels both mean unlabeled (nil); [] is a labeled
	// bag with no class.
	if ls, ok := obj["labels"].([]any); ok {
		if m.Labels, err = toInts(ls); err != nil {
			return nil, fmt.Errorf("labels: %w", err)
		}
	}
	if ls, ok := obj["instance_labels"].([]any); ok && len(ls) > 0 {
		if m.InstanceLabels, err = toInts(ls); err != nil {
			return nil, fmt.Errorf("instance_labels: %w", err)
		}
	}
	return m, nil
}

func toInt(v any) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%T is not a number", v)
	}
	i, err := strconv.Atoi(n.String())
	if err != nil {
		return 0, err
	}
	return i, nil
}

func toInts(vs []any) ([]int, error) {
	out := make([]int, len(vs))
	for i, v := range vs {
		n, err := toInt(v)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// precheck finds the faults the schema would report vaguely: an empty bag
// and non-finite features, whether written as strings ("NaN", "Infinity")
// or as numbers too large for a float64 (1e999). Parsing each feature once
// for that, it also returns the feature vectors when every instance is an
// array of numbers (nil otherwise: the schema then rejects the document),
// in one backing array.
func precheck(doc any) ([][]float64, error) {
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, nil
	}
	insts, ok := obj["instances"].([]any)
	if !ok {
		return nil, nil
	}
	if len(insts) == 0 {
		return nil, Reject(ReasonEmptyBag, mil.ErrEmptyBag)
	}
	numeric, total := true, 0
	for _, row := range insts {
		vals, ok := row.([]any)
		if !ok {
			numeric = false
			continue
		}
		total += len(vals)
	}
	var backing []float64
	var out [][]float64
	if numeric {
		backing = make([]float64, 0, total)
		out = make([][]float64, 0, len(insts))
	}
	for i, row := range insts {
		vals, ok := row.([]any)
		if !ok {
			continue
		}
		start := len(backing)
		for j, x := range vals {
			var s string
			switch t := x.(type) {
			case json.Number:
				s = t.String()
			case string:
				s = strings.TrimSpace(t)
				numeric = false
			default:
				numeric = false
				continue
			}
			f, err := strconv.ParseFloat(s, 64)
			if (err == nil || errors.Is(err, strconv.ErrRange)) && (math.IsNaN(f) || math.IsInf(f, 0)) {
				return nil, Reject(ReasonNonFinite, fmt.Errorf("instance %d feature %d = %q: %w", i, j, s, mil.ErrNonFinite))
			}
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				numeric = false // not a number (a string the schema rejects)
			}
			if numeric {
				backing = append(backing, f)
			}
		}
		if numeric {
			// Capped, so an append to one row cannot spill into the next.
			out = append(out, backing[start:len(backing):len(backing)])
		}
	}
	if !numeric {
		return nil, nil
	}
	return out, nil
}

// flattenSchemaError keeps the schema error on one line for dead-letter
// records and logs.
func flattenSchemaError(err error) error {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return errors.New(strings.Join(strings.Fields(ve.Error()), " "))
	}
	return err
}

// ValidateAnnotation checks an annotation against its schema (used by tests
// and by consumers that want to be strict).
func (v *Validator) ValidateAnnotation(raw []byte) error {
	return v.validate(v.schemas.Annotation, raw)
}

// ValidateDeadLetter checks a dead-letter record against its schema.
func (v *Validator) ValidateDeadLetter(raw []byte) error {
	return v.validate(v.schemas.DeadLetter, raw)
}

func (v *Validator) validate(s *jsonschema.Schema, raw []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return s.Validate(doc)
}

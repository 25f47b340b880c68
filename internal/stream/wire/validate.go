package wire

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// RejectError is an input error with its dead-letter reason. Retrying the
// message cannot succeed.
type RejectError struct {
	Reason Reason
	Err    error
	// BagID is the id of the rejected bag when the message names a valid
	// one (a message too broken to be read names none): what its dead
	// letter is keyed by (OutputKey).
	BagID string
}

// withBagID records id as the rejected bag's id in err, a *RejectError,
// when id is one the schema accepts (1 to maxIDLength code points of valid
// UTF-8), and returns err. id is copied: it may be a view of a message.
func withBagID(err error, id string) error {
	var re *RejectError
	if errors.As(err, &re) && utf8.ValidString(id) {
		if n := utf8.RuneCountInString(id); n >= 1 && n <= maxIDLength {
			re.BagID = strings.Clone(id)
		}
	}
	return err
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
	case errors.Is(err, mil.ErrSparse):
		// Indices out of order, or not one value per index: what the
		// schema says of a sparse instance.
		return ReasonSchema, true
	}
	return "", false
}

// Validator checks raw messages against the bag schema and the bag
// invariants. It is immutable and safe for concurrent use.
type Validator struct {
	maxBytes int
	// scratch holds *bagDecoder: their feature buffers, grown to the
	// size of the messages seen, are reused rather than grown again for
	// every message.
	scratch sync.Pool
}

// NewValidator returns a validator of bag messages of at most maxBytes
// bytes (<= 0: no limit). It never fails; the error is kept for the
// callers written when it compiled the schemas.
func NewValidator(maxBytes int) (*Validator, error) {
	return &Validator{maxBytes: maxBytes}, nil
}

// DecodeBag validates raw bytes as a bag message and decodes it, in one
// pass (see bagdecode.go). Errors are *RejectError. The reason names the
// actual fault: an empty bag is "empty_bag", not a generic schema
// violation; "NaN" as a string is "non_finite".
func (v *Validator) DecodeBag(raw []byte) (*BagMessage, error) {
	d, ok := v.scratch.Get().(*bagDecoder)
	if !ok {
		d = new(bagDecoder)
	}
	m, err := d.decode(raw, v.maxBytes)
	v.scratch.Put(d)
	return m, err
}

// CheckEncoded checks m, whose wire form (json.Marshal(m)) is size bytes
// long, as DecodeBag would check that wire form, without reading it: the
// same verdict, the same reason, and the message DecodeBag would return
// (sharing m's slices). A message json.Marshal cannot write (a NaN or ±Inf
// feature) is non_finite. Ingest uses it for the bags of a dataset, which
// it encodes once and never decodes.
func (v *Validator) CheckEncoded(m *BagMessage, size int) (*BagMessage, error) {
	if v.maxBytes > 0 && size > v.maxBytes {
		return nil, Reject(ReasonOversize, fmt.Errorf("message of %d bytes exceeds the %d-byte limit", size, v.maxBytes))
	}
	if (m.Instances != nil && len(m.Instances) == 0) || (m.SparseInstances != nil && len(m.SparseInstances) == 0) {
		return nil, Reject(ReasonEmptyBag, fmt.Errorf("bag %q: %w", m.ID, mil.ErrEmptyBag))
	}
	if err := checkFinite(m); err != nil {
		return nil, err
	}
	if err := checkSchema(m); err != nil {
		return nil, Reject(ReasonSchema, err)
	}
	// What the wire form holds: json.Marshal leaves out empty classes and
	// instance labels (omitempty) and writes each byte of invalid UTF-8
	// as U+FFFD.
	out := *m
	out.ID, out.Source = coerceUTF8(m.ID), coerceUTF8(m.Source)
	out.Classes = nil
	if len(m.Classes) > 0 {
		out.Classes = make([]string, len(m.Classes))
		for k, c := range m.Classes {
			out.Classes[k] = coerceUTF8(c)
		}
	}
	if len(m.InstanceLabels) == 0 {
		out.InstanceLabels = nil
	}
	if err := checkInvariants(&out); err != nil {
		return nil, err
	}
	return &out, nil
}

// checkFinite rejects a feature, dense or sparse, that is NaN, infinite
// or beyond MaxFeatureMagnitude, as non_finite.
func checkFinite(m *BagMessage) error {
	for k, x := range m.Instances {
		for j, f := range x {
			if !usable(f) {
				return Reject(ReasonNonFinite, fmt.Errorf("instance %d feature %d = %v: %w", k, j, f, unusable(f)))
			}
		}
	}
	for k, v := range m.SparseInstances {
		for e, f := range v.Val {
			if !usable(f) {
				return Reject(ReasonNonFinite, fmt.Errorf("instance %d value %d = %v: %w", k, e, f, unusable(f)))
			}
		}
	}
	return nil
}

// checkSchema checks a message against the bag schema as json.Marshal
// writes it: a nil slice is null (a nil Instances or SparseInstances is
// left out), empty classes and instance labels are left out, nil labels
// are left out and any others written. It also checks the rules of a
// sparse instance the schema states in words only (indices strictly
// ascending, one value per index): they are schema faults too.
func checkSchema(m *BagMessage) error {
	if m.SchemaVersion != 1 {
		return fmt.Errorf("schema_version %d, want 1", m.SchemaVersion)
	}
	if n := utf8.RuneCountInString(m.ID); n < 1 || n > maxIDLength {
		return fmt.Errorf("id of %d characters, want 1 to %d", n, maxIDLength)
	}
	if m.Dim < 1 {
		return fmt.Errorf("dim: %d is less than 1", m.Dim)
	}
	switch {
	case m.Instances == nil && m.SparseInstances == nil:
		return errors.New("neither instances nor sparse_instances")
	case m.Instances != nil && m.SparseInstances != nil:
		return errors.New("both instances and sparse_instances")
	}
	for k, x := range m.Instances {
		if len(x) == 0 {
			return fmt.Errorf("instance %d has no feature", k)
		}
	}
	for k, v := range m.SparseInstances {
		if err := checkSparseSchema(v.Idx, len(v.Val), v.Idx != nil, v.Val != nil); err != nil {
			return fmt.Errorf("sparse instance %d: %w", k, err)
		}
	}
	if m.Labels != nil && len(m.Classes) == 0 {
		return errors.New("labels without classes")
	}
	for _, l := range m.Labels {
		if l < 0 {
			return fmt.Errorf("labels: %d is less than 0", l)
		}
	}
	if !uniqueInts(m.Labels) {
		return errors.New("labels repeat a class")
	}
	for _, l := range m.InstanceLabels {
		if l < -1 {
			return fmt.Errorf("instance_labels: %d is less than -1", l)
		}
	}
	return nil
}

// checkSparseSchema checks one sparse instance's indices and the number of
// its values against the schema and its rules in words: hasIdx and hasVal
// say the arrays are there (not null, not missing).
func checkSparseSchema(idx []int32, vals int, hasIdx, hasVal bool) error {
	switch {
	case !hasIdx:
		return errors.New("idx is not an array")
	case !hasVal:
		return errors.New("val is not an array")
	}
	for e, j := range idx {
		if j < 0 {
			return fmt.Errorf("idx: %d is less than 0", j)
		}
		if e > 0 && j <= idx[e-1] {
			return fmt.Errorf("idx not strictly ascending (%d after %d)", j, idx[e-1])
		}
	}
	if len(idx) != vals {
		return fmt.Errorf("%d indices and %d values", len(idx), vals)
	}
	return nil
}

// coerceUTF8 returns s as json.Marshal writes it: each byte that is not
// part of valid UTF-8 replaced by U+FFFD.
func coerceUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		// Ranging over a string yields U+FFFD for each invalid byte.
		b.WriteRune(r)
	}
	return b.String()
}

// Package schemaref is the reference validator of the pipeline's messages:
// the embedded JSON Schemas (schemas/) compiled by a generic JSON Schema
// validator, with the bag invariants the schema cannot express. It is the
// validation the services did before the typed decoder
// (wire.Validator.DecodeBag) replaced it on their hot path, kept for the
// tests: the differential tests hold the typed decoder to this reference's
// verdicts and reasons, and the tests of the annotator and the dead letters
// check records against the published schemas with it. Only tests import
// this package, so no service links the generic validator.
package schemaref

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
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/schemas"
)

// baseURL is the common prefix of the schemas' $id.
const baseURL = "https://mimlstream.dev/schemas/"

// Set is the compiled schemas. Compiled schemas are immutable and safe for
// concurrent validation.
type Set struct {
	Bag        *jsonschema.Schema
	Annotation *jsonschema.Schema
	DeadLetter *jsonschema.Schema
}

// Compile compiles the embedded schemas.
func Compile() (*Set, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	compile := func(name string) (*jsonschema.Schema, error) {
		raw, err := schemas.Raw(name)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		// Registered under their $id base, so errors name the published
		// schema rather than a path in the working directory.
		url := baseURL + name
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		s, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("compile schema %s: %w", name, err)
		}
		return s, nil
	}
	var s Set
	var err error
	if s.Bag, err = compile(schemas.BagFile); err != nil {
		return nil, err
	}
	if s.Annotation, err = compile(schemas.AnnotationFile); err != nil {
		return nil, err
	}
	if s.DeadLetter, err = compile(schemas.DeadLetterFile); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validator checks raw messages against the schemas and the bag invariants.
type Validator struct {
	schemas  *Set
	maxBytes int
}

// New compiles the embedded schemas. maxBytes <= 0 disables the size limit
// of bags.
func New(maxBytes int) (*Validator, error) {
	s, err := Compile()
	if err != nil {
		return nil, err
	}
	return &Validator{schemas: s, maxBytes: maxBytes}, nil
}

// MustNew is New for tests, which cannot go on without it.
func MustNew(maxBytes int) *Validator {
	v, err := New(maxBytes)
	if err != nil {
		panic(err)
	}
	return v
}

// Schemas returns the compiled schemas.
func (v *Validator) Schemas() *Set { return v.schemas }

// DecodeBag validates raw bytes as a bag message. Errors are
// *wire.RejectError. The checks run from the cheapest and most specific to
// the most general, so the reason names the actual fault (an empty bag is
// "empty_bag", not a generic schema violation; "NaN" as a string is
// "non_finite").
func (v *Validator) DecodeBag(raw []byte) (*wire.BagMessage, error) {
	if v.maxBytes > 0 && len(raw) > v.maxBytes {
		return nil, wire.Reject(wire.ReasonOversize, fmt.Errorf("message of %d bytes exceeds the %d-byte limit", len(raw), v.maxBytes))
	}
	doc, err := DecodeDocument(raw)
	if err != nil {
		return nil, wire.Reject(wire.ReasonMalformedJSON, err)
	}
	instances, err := precheck(doc)
	if err != nil {
		return nil, err
	}
	if err := v.schemas.Bag.Validate(doc); err != nil {
		return nil, wire.Reject(wire.ReasonSchema, flattenSchemaError(err))
	}
	m, err := bagFromDoc(doc.(map[string]any), instances)
	if err != nil {
		// Only a value the Go types cannot hold remains (an integer
		// overflowing int, say).
		return nil, wire.Reject(wire.ReasonSchema, err)
	}
	// What the schema says of a sparse instance in words only (JSON
	// Schema cannot compare items or two arrays' lengths): indices
	// strictly ascending, one value per index. Schema faults, after the
	// schema's own.
	for k, sv := range m.SparseInstances {
		if err := sv.Validate(0); err != nil {
			return nil, wire.Reject(wire.ReasonSchema, fmt.Errorf("sparse instance %d: %w", k, err))
		}
	}
	if err := m.Bag().Validate(m.Dim, len(m.Classes)); err != nil {
		r, _ := wire.ReasonOf(err)
		return nil, wire.Reject(r, err)
	}
	if m.Labels != nil && len(m.Classes) == 0 {
		return nil, wire.Reject(wire.ReasonLabels, errors.New("labels without a class vocabulary"))
	}
	if err := wire.CheckProvenance(m); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeDocument parses raw into the generic value the schema validator
// takes (map[string]any, []any, json.Number, string, bool, nil) and refuses
// documents that parsers may read differently (wire.ErrAmbiguous), which
// the generic decoder accepts.
func DecodeDocument(raw []byte) (any, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if err := checkUnambiguous(raw); err != nil {
		return nil, err
	}
	return doc, nil
}

// bagFromDoc converts a document that passed the bag schema; instances are
// its feature vectors as precheck converted them.
func bagFromDoc(obj map[string]any, instances converted) (*wire.BagMessage, error) {
	if instances.dense == nil && instances.sparse == nil {
		return nil, errors.New("instances: not arrays of numbers")
	}
	m := &wire.BagMessage{Instances: instances.dense}
	var err error
	if instances.sparse != nil {
		if m.SparseInstances, err = sparseFromDoc(instances.sparse); err != nil {
			return nil, err
		}
	}
	if m.SchemaVersion, err = toInt(obj["schema_version"]); err != nil {
		return nil, fmt.Errorf("schema_version: %w", err)
	}
	m.ID, _ = obj["id"].(string)
	m.Source, _ = obj["source"].(string)
	if m.Dim, err = toInt(obj["dim"]); err != nil {
		return nil, fmt.Errorf("dim: %w", err)
	}
	if cs, ok := obj["classes"].([]any); ok {
		m.Classes = make([]string, len(cs))
		for i, c := range cs {
			m.Classes[i], _ = c.(string)
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
	// Provenance passed the schema: re-encoded and decoded into its types
	// (an integer too large for an int fails here, a schema fault).
	for key, dst := range map[string]any{"media": &m.Media, "featurizer": &m.Featurizer, "regions": &m.Regions} {
		v, ok := obj[key]
		if !ok {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	return m, nil
}

// sparseFromDoc converts the sparse instances of a document that passed
// the schema (so every idx is an integer of at most 2^31-1, every val a
// number); vals are their values as precheck converted them.
func sparseFromDoc(sp []sparseDoc) ([]mil.SparseVec, error) {
	out := make([]mil.SparseVec, len(sp))
	for k, s := range sp {
		idx, err := toInts(s.idx)
		if err != nil {
			return nil, fmt.Errorf("sparse instance %d idx: %w", k, err)
		}
		out[k] = mil.SparseVec{Idx: make([]int32, 0, len(idx)), Val: s.val}
		for _, j := range idx {
			out[k].Idx = append(out[k].Idx, int32(j))
		}
	}
	return out, nil
}

func toInt(v any) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%T is not a number", v)
	}
	return strconv.Atoi(n.String())
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

// converted holds the instances of a document as precheck converted them:
// dense the feature vectors when "instances" is an array of arrays of
// numbers, sparse the sparse instances when "sparse_instances" is an array
// of objects whose val is an array of numbers (nil otherwise: the schema
// then rejects the document, or the document has no such property).
type converted struct {
	dense  [][]float64
	sparse []sparseDoc
}

// sparseDoc is one sparse instance of a document: its idx items as they
// are, its val converted.
type sparseDoc struct {
	idx []any
	val []float64
}

// precheck finds the faults the schema would report vaguely: an empty bag
// (either encoding's array empty) and non-finite features (dense features
// and sparse values), whether written as strings ("NaN", "Infinity") or
// as numbers too large for a float64 (1e999). It also converts the
// instances (see converted).
func precheck(doc any) (converted, error) {
	obj, ok := doc.(map[string]any)
	if !ok {
		return converted{}, nil
	}
	insts, dense := obj["instances"].([]any)
	sparse, isSparse := obj["sparse_instances"].([]any)
	if (dense && len(insts) == 0) || (isSparse && len(sparse) == 0) {
		return converted{}, wire.Reject(wire.ReasonEmptyBag, mil.ErrEmptyBag)
	}
	var out converted
	if dense {
		numeric := true
		rows := make([][]float64, 0, len(insts))
		for i, row := range insts {
			vals, ok := row.([]any)
			if !ok {
				numeric = false
				continue
			}
			x, ok, err := numbers(vals, func(j int, s string) error {
				return fmt.Errorf("instance %d feature %d = %q: %w", i, j, s, mil.ErrNonFinite)
			})
			if err != nil {
				return converted{}, err
			}
			numeric = numeric && ok
			rows = append(rows, x)
		}
		if numeric {
			out.dense = rows
		}
	}
	if isSparse {
		numeric := true
		rows := make([]sparseDoc, 0, len(sparse))
		for i, inst := range sparse {
			o, ok := inst.(map[string]any)
			if !ok {
				numeric = false
				continue
			}
			// Only the values are features: a string in idx is a plain
			// schema fault.
			vals, ok := o["val"].([]any)
			if !ok {
				numeric = false
				continue
			}
			x, ok, err := numbers(vals, func(j int, s string) error {
				return fmt.Errorf("instance %d value %d = %q: %w", i, j, s, mil.ErrNonFinite)
			})
			if err != nil {
				return converted{}, err
			}
			idx, _ := o["idx"].([]any)
			numeric = numeric && ok
			rows = append(rows, sparseDoc{idx: idx, val: x})
		}
		if numeric {
			out.sparse = rows
		}
	}
	return out, nil
}

// numbers converts an array of features; ok is false when one is not a
// number. A non-finite one is non_finite, with nonFinite's error.
func numbers(vals []any, nonFinite func(j int, s string) error) (_ []float64, ok bool, _ error) {
	ok = true
	x := make([]float64, 0, len(vals))
	for j, v := range vals {
		var s string
		switch t := v.(type) {
		case json.Number:
			s = t.String()
		case string:
			s = strings.TrimSpace(t)
			ok = false
		default:
			ok = false
			continue
		}
		f, err := strconv.ParseFloat(s, 64)
		// A string is refused only as NaN or ±Inf spelt out; a number
		// also beyond the bound on a feature's magnitude.
		_, isNumber := v.(json.Number)
		if (err == nil || errors.Is(err, strconv.ErrRange)) &&
			(math.IsNaN(f) || math.IsInf(f, 0) || (isNumber && math.Abs(f) > wire.MaxFeatureMagnitude)) {
			return nil, false, wire.Reject(wire.ReasonNonFinite, nonFinite(j, s))
		}
		x = append(x, f)
	}
	return x, ok, nil
}

// flattenSchemaError keeps the schema error on one line.
func flattenSchemaError(err error) error {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return errors.New(strings.Join(strings.Fields(ve.Error()), " "))
	}
	return err
}

// ValidateAnnotation checks an annotation against its schema.
func (v *Validator) ValidateAnnotation(raw []byte) error {
	return validate(v.schemas.Annotation, raw)
}

// ValidateDeadLetter checks a dead-letter record against its schema.
func (v *Validator) ValidateDeadLetter(raw []byte) error {
	return validate(v.schemas.DeadLetter, raw)
}

func validate(s *jsonschema.Schema, raw []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return s.Validate(doc)
}

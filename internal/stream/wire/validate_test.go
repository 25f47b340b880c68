package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/schemaref"
	"github.com/mimlstream/mimlstream/schemas"
)

func jsonFields(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = true
	}
	return out
}

type schemaDoc struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

// TestSchemasMatchTypes checks both directions: every schema property is a
// field of the Go type and every field is a schema property, and required
// schema properties are fields the Go type always writes (no omitempty).
func TestSchemasMatchTypes(t *testing.T) {
	cases := []struct {
		file string
		typ  reflect.Type
	}{
		{schemas.BagFile, reflect.TypeOf(wire.BagMessage{})},
		{schemas.AnnotationFile, reflect.TypeOf(wire.AnnotationMessage{})},
		{schemas.DeadLetterFile, reflect.TypeOf(wire.DeadLetter{})},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			raw, err := schemas.Raw(c.file)
			if err != nil {
				t.Fatal(err)
			}
			var d schemaDoc
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			fields := jsonFields(c.typ)
			for p := range d.Properties {
				if !fields[p] {
					t.Errorf("schema property %q has no field in %s", p, c.typ)
				}
			}
			for f := range fields {
				if _, ok := d.Properties[f]; !ok {
					t.Errorf("field %q of %s is not in the schema", f, c.typ)
				}
			}
			if c.typ == reflect.TypeOf(wire.BagMessage{}) {
				// A sparse instance is a mil.SparseVec.
				var sp struct {
					Items schemaDoc `json:"items"`
				}
				if err := json.Unmarshal(d.Properties["sparse_instances"], &sp); err != nil {
					t.Fatal(err)
				}
				props := map[string]bool{}
				for p := range sp.Items.Properties {
					props[p] = true
				}
				if f := jsonFields(reflect.TypeOf(mil.SparseVec{})); !reflect.DeepEqual(props, f) || len(sp.Items.Required) != len(f) {
					t.Errorf("sparse instance properties %v (required %v), mil.SparseVec fields %v", props, sp.Items.Required, f)
				}
			}
			for i := range c.typ.NumField() {
				name, opts, _ := strings.Cut(c.typ.Field(i).Tag.Get("json"), ",")
				for _, r := range d.Required {
					if r == name && (strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")) {
						t.Errorf("required property %q is omitempty in %s", r, c.typ)
					}
				}
			}
		})
	}
}

// TestGeneratedInstancesValidate marshals Go values (minimal and full) and
// validates them against the schemas: bags with the typed decoder and the
// reference, annotations and dead letters with the reference. Catches a Go
// type that writes what its schema refuses.
func TestGeneratedInstancesValidate(t *testing.T) {
	v, err := wire.NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	ref := schemaref.MustNew(0)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	bag := &mil.Bag{ID: "b1", Instances: [][]float64{{0.1, 0.2}, {0.3, 0.4}}, Labels: []int{1}, InstanceLabels: []int{1, -1}}
	neg := &mil.Bag{ID: "n1", Instances: [][]float64{{0, 1}}, Labels: []int{}}
	unl := &mil.Bag{ID: "u1", Instances: [][]float64{{0, 1}}}
	// A sparse bag with an instance without non-zeros: mil.SparseOf gives
	// it nil arrays, which must go out as [] (null is a schema fault).
	sp := &mil.Bag{ID: "s1", Sparse: []mil.SparseVec{{Idx: []int32{0, 3}, Val: []float64{0.5, -2}}, mil.SparseOf([]float64{0, 0, 0, 0})},
		Labels: []int{0}, InstanceLabels: []int{0, -1}}
	for _, m := range []wire.BagMessage{
		wire.NewBagMessage(sp, "test", 4, []string{"a"}, true),
		wire.NewBagMessage(&mil.Bag{ID: sp.ID, Sparse: sp.Sparse}, "", 4, nil, false),
		wire.NewBagMessage(bag, "test", 2, []string{"a", "b"}, true),
		wire.NewBagMessage(bag, "", 2, []string{"a", "b"}, false),
		wire.NewBagMessage(neg, "test", 2, []string{"positive"}, false),
		wire.NewBagMessage(unl, "", 2, nil, false),
	} {
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.DecodeBag(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if !reflect.DeepEqual(*got, m) {
			t.Errorf("round trip changed the bag:\n got %+v\nwant %+v", *got, m)
		}
		if (got.Labels == nil) != (m.Labels == nil) {
			t.Errorf("%s: labeled-ness lost in the round trip", m.ID)
		}
		if _, err := ref.DecodeBag(raw); err != nil {
			t.Errorf("the reference refuses %s: %v", raw, err)
		}
	}
	for _, a := range []wire.AnnotationMessage{
		{SchemaVersion: 1, BagID: "b", Model: "k", ModelVersion: "1", Mode: string(models.Inductive), Classes: []string{}, BagLabels: []int{}, BagScores: []float64{}, AnnotatedAt: now},
		{SchemaVersion: 1, BagID: "b", Source: "s", Model: "k", ModelVersion: "2", Mode: string(models.Transductive), Classes: []string{"a"},
			InstanceLabels: []int{0}, InstanceScores: [][]float64{{0.5}}, BagLabels: []int{0}, BagScores: []float64{0.5}, LatencyMS: 1.5, IngestedAt: &now, AnnotatedAt: now, Annotator: "x"},
	} {
		raw, _ := json.Marshal(a)
		if err := ref.ValidateAnnotation(raw); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
	for _, r := range wire.Reasons() {
		d := wire.DeadLetter{SchemaVersion: 1, Reason: r, Error: "e", Stage: wire.StageAnnotate, Key: "k", Topic: "t", Partition: 2, Offset: 7, Original: []byte{0, 1, 2}, OriginalSize: 3, At: now}
		raw, _ := json.Marshal(d)
		if err := ref.ValidateDeadLetter(raw); err != nil {
			t.Errorf("reason %s: %v", r, err)
		}
	}
	for _, stage := range []string{wire.StageIngest, wire.StageAnnotate, wire.StageRetrain} {
		raw := wire.NewDeadLetter(stage, wire.ReasonLabels, errors.New("e"), "k", "t", 0, -1, []byte("x")).Encode(0)
		if err := ref.ValidateDeadLetter(raw); err != nil {
			t.Errorf("stage %s: %v", stage, err)
		}
	}
	// And the schema's reason enum is exactly Reasons().
	raw, _ := schemas.Raw(schemas.DeadLetterFile)
	var d struct {
		Properties struct {
			Reason struct {
				Enum []string `json:"enum"`
			} `json:"reason"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range wire.Reasons() {
		want = append(want, string(r))
	}
	sort.Strings(want)
	sort.Strings(d.Properties.Reason.Enum)
	if !reflect.DeepEqual(want, d.Properties.Reason.Enum) {
		t.Errorf("schema reasons %v, Go reasons %v", d.Properties.Reason.Enum, want)
	}
}

// TestDecodeBagRejects names the reason of one fault at a time, for the
// typed decoder and the reference alike. Catches a fault accepted, or
// dead-lettered under another reason.
func TestDecodeBagRejects(t *testing.T) {
	v, err := wire.NewValidator(300)
	if err != nil {
		t.Fatal(err)
	}
	ref := schemaref.MustNew(300)
	big := `{"schema_version":1,"id":"big","dim":1,"instances":[` + strings.Repeat("[0.5],", 60) + `[0.5]]}`
	cases := []struct {
		name string
		raw  string
		want wire.Reason
	}{
		{"truncated", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,2]`, wire.ReasonMalformedJSON},
		{"not json", `hello`, wire.ReasonMalformedJSON},
		{"nan string", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,"NaN"]]}`, wire.ReasonNonFinite},
		{"inf string", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,"-Infinity"]]}`, wire.ReasonNonFinite},
		{"overflow number", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,1e999]]}`, wire.ReasonNonFinite},
		{"other string", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,"abc"]]}`, wire.ReasonSchema},
		{"empty bag", `{"schema_version":1,"id":"x","dim":2,"instances":[]}`, wire.ReasonEmptyBag},
		{"wrong dim", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,2],[1,2,3]]}`, wire.ReasonDimension},
		{"missing id", `{"schema_version":1,"dim":2,"instances":[[1,2]]}`, wire.ReasonSchema},
		{"extra field", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,2]],"foo":1}`, wire.ReasonSchema},
		{"wrong version", `{"schema_version":2,"id":"x","dim":2,"instances":[[1,2]]}`, wire.ReasonSchema},
		{"labels without classes", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,2]],"labels":[0]}`, wire.ReasonSchema},
		{"label out of range", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,2]],"labels":[3],"classes":["a","b"]}`, wire.ReasonLabels},
		{"labels unordered", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,2]],"labels":[1,0],"classes":["a","b"]}`, wire.ReasonLabels},
		{"oversize", big, wire.ReasonOversize},
		// Ambiguous: two parsers could read a different bag.
		{"repeated id", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,2]],"id":"y"}`, wire.ReasonMalformedJSON},
		{"repeated id, escaped", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,2]],"\u0069d":"y"}`, wire.ReasonMalformedJSON},
		{"repeated instances", `{"schema_version":1,"id":"x","dim":2,"instances":[[1,2]],"instances":[[3,4]]}`, wire.ReasonMalformedJSON},
		{"invalid UTF-8 id", "{\"schema_version\":1,\"id\":\"x\xff\",\"dim\":2,\"instances\":[[1,2]]}", wire.ReasonMalformedJSON},
		{"unpaired surrogate id", `{"schema_version":1,"id":"x\ud800","dim":2,"instances":[[1,2]]}`, wire.ReasonMalformedJSON},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.DecodeBag([]byte(c.raw))
			r, ok := wire.ReasonOf(err)
			if !ok || r != c.want {
				t.Fatalf("reason %q (input error %v), want %q: %v", r, ok, c.want, err)
			}
			_, rerr := ref.DecodeBag([]byte(c.raw))
			if rr, _ := wire.ReasonOf(rerr); rr != c.want {
				t.Errorf("the reference says %q: %v", rr, rerr)
			}
			if ambiguous := strings.Contains(c.name, "repeated") || strings.Contains(c.name, "UTF-8") || strings.Contains(c.name, "surrogate"); ambiguous {
				if !errors.Is(err, wire.ErrAmbiguous) {
					t.Errorf("%v does not wrap ErrAmbiguous", err)
				}
			}
		})
	}
	// Unambiguous non-ASCII ids pass and decode to what the bytes say.
	for raw, id := range map[string]string{
		`{"schema_version":1,"id":"caf\u00e9 \ud83d\ude00","dim":2,"instances":[[1,2]]}`: "caf\u00e9 \U0001F600",
		"{\"schema_version\":1,\"id\":\"caf\u00e9\",\"dim\":2,\"instances\":[[1,2]]}":    "caf\u00e9",
	} {
		m, err := v.DecodeBag([]byte(raw))
		if err != nil || m.ID != id {
			t.Errorf("DecodeBag(%s) = %v; want id %q", raw, err, id)
		}
	}
	// A valid bag just under the limit passes.
	if _, err := v.DecodeBag([]byte(`{"schema_version":1,"id":"ok","dim":2,"instances":[[1,2]]}`)); err != nil {
		t.Fatal(err)
	}
}

func TestReasonOf(t *testing.T) {
	cases := []struct {
		err  error
		want wire.Reason
		ok   bool
	}{
		{fmt.Errorf("x: %w", mil.ErrDimension), wire.ReasonDimension, true},
		{fmt.Errorf("x: %w", mil.ErrNonFinite), wire.ReasonNonFinite, true},
		{wire.Reject(wire.ReasonOversize, fmt.Errorf("big")), wire.ReasonOversize, true},
		{fmt.Errorf("redis down"), "", false},
		{nil, "", false},
	}
	for _, c := range cases {
		r, ok := wire.ReasonOf(c.err)
		if r != c.want || ok != c.ok {
			t.Errorf("ReasonOf(%v) = %q,%v want %q,%v", c.err, r, ok, c.want, c.ok)
		}
	}
}

// TestDecodeBagRoundTrips decodes every MSCV2 bag (the fast path) and bags
// with escaped or non-ASCII strings (the reference path) back to the
// message that was encoded; rows share one backing array but cannot
// overwrite each other.
func TestDecodeBagRoundTrips(t *testing.T) {
	v, err := wire.NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Load("../../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []wire.BagMessage
	for i := range ds.Bags {
		msgs = append(msgs, wire.NewBagMessage(&ds.Bags[i], "mscv2", ds.Dim, ds.Classes, i%2 == 0))
	}
	// Negative zero (math.Copysign: the literal -0.0 is positive zero in
	// Go) on the reference path (escaped and non-ASCII strings) and on the
	// fast path; json.Marshal writes it as -0.
	negZero := math.Copysign(0, -1)
	odd := &mil.Bag{ID: "b\u00e4g \"7\"\n", Instances: [][]float64{{1e-300, negZero}, {5e99, 1}}, Labels: []int{0}}
	msgs = append(msgs, wire.NewBagMessage(odd, "caf\u00e9\\src", 2, []string{"\u00e9t\u00e9", "b"}, false))
	plain := &mil.Bag{ID: "negzero", Instances: [][]float64{{negZero, 0}, {-1e-320, negZero}}}
	msgs = append(msgs, wire.NewBagMessage(plain, "toy", 2, nil, false))
	for _, m := range msgs {
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.DecodeBag(raw)
		if err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		if !reflect.DeepEqual(*got, m) {
			t.Fatalf("round trip changed bag %s:\n got %+v\nwant %+v", m.ID, *got, m)
		}
		// DeepEqual compares floats with ==, for which -0 == 0: compare
		// the bits, so a lost sign is caught.
		for i := range m.Instances {
			for j, x := range m.Instances[i] {
				if y := got.Instances[i][j]; math.Float64bits(y) != math.Float64bits(x) {
					t.Fatalf("bag %s instance %d feature %d: %v (sign bit %v), want %v (sign bit %v)", m.ID, i, j, y, math.Signbit(y), x, math.Signbit(x))
				}
			}
		}
		if len(got.Instances) > 1 {
			second := slices.Clone(got.Instances[1])
			got.Instances[0] = append(got.Instances[0], 42)
			if !slices.Equal(got.Instances[1], second) {
				t.Fatalf("%s: appending to instance 0 changed instance 1", m.ID)
			}
		}
	}
}

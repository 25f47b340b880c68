package wire_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/schemaref"
)

// reflective is AnnotationMessage without its MarshalJSON: encoding/json
// writes it by reflection from the same field tags, the reference.
type reflective wire.AnnotationMessage

// sameAnnotationJSON compares the hand-written encoder with the reflective
// one on a: the same bytes, or both an error.
func sameAnnotationJSON(t *testing.T, a wire.AnnotationMessage) {
	t.Helper()
	got, err := a.MarshalJSON()
	want, wantErr := json.Marshal(reflective(a))
	if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("MarshalJSON:\n%s (%v)\nencoding/json:\n%s (%v)", got, err, want, wantErr)
	}
	// And json.Marshal, which now calls MarshalJSON, agrees too.
	via, err := json.Marshal(a)
	if (err == nil) != (wantErr == nil) || !bytes.Equal(via, want) {
		t.Fatalf("json.Marshal through MarshalJSON:\n%s (%v)\nwant:\n%s", via, err, want)
	}
}

// TestAnnotationJSONMatchesReflection: the annotation encoder writes what
// encoding/json writes, byte for byte, over strings that need escaping
// (quotes, controls, HTML characters, U+2028, invalid UTF-8), numbers at
// the cutoffs of exponent notation, nil and empty slices, optional fields
// set or not, and times it cannot write. Catches any drift of the wire
// form of annotations, and a NaN written instead of refused.
func TestAnnotationJSONMatchesReflection(t *testing.T) {
	strs := []string{"", "b", "a\"b\\c", "<tag>&amp;", "\x00\x01\x1f\x7f", "\b\f\n\r\t", "caf\u00e9 \U0001F600", "\u2028\u2029",
		"bad\xffutf8\xc3", "\xed\xa0\x80", "01HZX3Y4Z5ABCDEFGHJKMNPQRS"}
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1e-6, 9.99999e-7, 1e-7, 1.5e-7, 1e20, 1e21, 9.999999999999999e20, -1e21,
		1e-300, 5e-324, math.MaxFloat64, 123456.789, 1.0 / 3, 1e-10, 2.5e-100}
	times := []time.Time{time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 5*3600+1800)),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)}
	rng := rand.New(rand.NewPCG(7, 8))
	p := picker{rng: rng, strs: strs, floats: floats}
	pickS, pickF, pickI := p.str, p.floatsOrNil, p.ints
	for range 6000 {
		a := wire.AnnotationMessage{SchemaVersion: rng.IntN(3), BagID: pickS(), Source: pickS(), Model: pickS(), ModelVersion: pickS(), ModelID: pickS(),
			Mode: pickS(), InstanceLabels: pickI(), BagLabels: pickI(), BagScores: pickF(), LatencyMS: floats[rng.IntN(len(floats))],
			AnnotatedAt: times[rng.IntN(len(times))], Annotator: pickS()}
		if rng.IntN(3) > 0 {
			a.Classes = []string{}
			for range rng.IntN(3) {
				a.Classes = append(a.Classes, pickS())
			}
		}
		if rng.IntN(2) == 0 {
			a.InstanceScores = [][]float64{}
			for range rng.IntN(3) {
				a.InstanceScores = append(a.InstanceScores, pickF())
			}
		}
		if rng.IntN(2) == 0 {
			ti := times[rng.IntN(len(times))]
			a.IngestedAt = &ti
		}
		sameAnnotationJSON(t, a)
	}
	// What encoding/json refuses, the encoder refuses.
	base := wire.AnnotationMessage{SchemaVersion: 1, BagID: "b", Model: "k", ModelVersion: "v1", Mode: "inductive", Classes: []string{"a"},
		BagLabels: []int{0}, BagScores: []float64{0.5}, AnnotatedAt: times[0]}
	sameAnnotationJSON(t, base)
	for _, bad := range []func(a *wire.AnnotationMessage){
		func(a *wire.AnnotationMessage) { a.BagScores = []float64{math.NaN()} },
		func(a *wire.AnnotationMessage) { a.InstanceScores = [][]float64{{0.5}, {math.Inf(1)}} },
		func(a *wire.AnnotationMessage) { a.LatencyMS = math.Inf(-1) },
		func(a *wire.AnnotationMessage) { a.AnnotatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		func(a *wire.AnnotationMessage) { ti := time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC); a.IngestedAt = &ti },
	} {
		a := base
		bad(&a)
		if _, err := a.MarshalJSON(); err == nil {
			t.Errorf("%+v written", a)
		}
		sameAnnotationJSON(t, a)
	}
	// And the output keeps to the annotation schema.
	raw, _ := base.MarshalJSON()
	if err := schemaref.MustNew(0).ValidateAnnotation(raw); err != nil {
		t.Errorf("%s: %v", raw, err)
	}
}

// BenchmarkAnnotationJSON: the hand-written encoder against reflection, on
// an MSCV2-sized annotation (23 classes, 3 instances), and the binary
// encoding of the same.
func BenchmarkAnnotationJSON(b *testing.B) {
	classes := make([]string, 23)
	scores := make([]float64, 23)
	inst := make([][]float64, 3)
	for i := range classes {
		classes[i] = "c" + string(rune('a'+i))
		scores[i] = float64(i) / 23
	}
	for i := range inst {
		inst[i] = scores
	}
	now := time.Now().UTC()
	a := wire.AnnotationMessage{SchemaVersion: 1, BagID: "MSCV2-1", Source: "mscv2", Model: "centroid", ModelVersion: "v1", Mode: "transductive",
		Classes: classes, InstanceLabels: []int{1, 2, 3}, InstanceScores: inst, BagLabels: []int{1, 2}, BagScores: scores, LatencyMS: 0.012,
		IngestedAt: &now, AnnotatedAt: now}
	b.Run("marshal", func(b *testing.B) {
		for range b.N {
			if _, err := a.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("protobuf", func(b *testing.B) {
		for range b.N {
			if _, err := a.MarshalProto(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reflect", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(reflective(a)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package wire_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// reflectiveBag is BagMessage without its MarshalJSON: encoding/json
// writes it by reflection from the same field tags, the reference.
type reflectiveBag wire.BagMessage

// sameBagJSON compares the hand-written encoder with the reflective one on
// m: the same bytes, or both an error.
func sameBagJSON(t *testing.T, m wire.BagMessage) {
	t.Helper()
	want, wantErr := json.Marshal(reflectiveBag(m))
	for name, enc := range map[string]func() ([]byte, error){
		"MarshalJSON":   m.MarshalJSON,
		"Marshal(json)": func() ([]byte, error) { return m.Marshal(wire.FormatJSON) },
		"json.Marshal":  func() ([]byte, error) { return json.Marshal(m) },
		"AppendJSON":    func() ([]byte, error) { return m.AppendJSON([]byte("prefix")) },
	} {
		got, err := enc()
		if name == "AppendJSON" && err == nil {
			if !bytes.HasPrefix(got, []byte("prefix")) {
				t.Fatalf("AppendJSON dropped what it appends to: %s", got)
			}
			got = got[len("prefix"):]
		}
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("%s:\n%s (%v)\nencoding/json:\n%s (%v)", name, got, err, want, wantErr)
		}
	}
}

// TestBagJSONMatchesReflection: the bag encoder writes what encoding/json
// writes, byte for byte: dense and sparse instances (nil and empty rows
// and index or value arrays), ids and sources that need escaping, labels
// nil, empty (a negative bag) or set, classes and instance labels present
// or omitted, and features at the edges of the short-decimal fast path.
// NaN and infinities are refused as encoding/json refuses them. Catches
// any drift of the wire form of bags (omitempty against omitzero above
// all: an empty label set must stay [] and not vanish).
func TestBagJSONMatchesReflection(t *testing.T) {
	strs := []string{"", "b", "MSCV2-1", "a\"b\\c", "<tag>&amp;", "\x00\x1f\x7f", "caf\u00e9", "\u2028", "bad\xffutf8"}
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 0.066935, 0.000302, -0.388872, 1e-6, 9.99999e-7, 1e-7, 1e20, 1e21,
		1 << 22, 1<<22 - 0.5, 4194303.999999999, 123456.789, 1.0 / 3, 1e-10, 5e-324, math.MaxFloat64, 0.1 + 0.2}
	rng := rand.New(rand.NewPCG(3, 4))
	p := picker{rng: rng, strs: strs, floats: floats}
	pickS, pickF, pickI := p.str, p.floatsOrNil, p.ints
	for range 6000 {
		m := wire.BagMessage{SchemaVersion: rng.IntN(3), ID: pickS(), Source: pickS(), Dim: rng.IntN(7) - 1,
			Labels: pickI(), InstanceLabels: pickI()}
		switch rng.IntN(4) {
		case 0:
		case 1:
			m.Instances = [][]float64{}
		case 2:
			for range rng.IntN(4) + 1 {
				m.Instances = append(m.Instances, pickF())
			}
		case 3:
			m.SparseInstances = []mil.SparseVec{}
			for range rng.IntN(4) {
				v := mil.SparseVec{Val: pickF()}
				if rng.IntN(4) > 0 {
					v.Idx = []int32{}
					for k := range v.Val {
						v.Idx = append(v.Idx, int32(3*k+rng.IntN(3)))
					}
				}
				m.SparseInstances = append(m.SparseInstances, v)
			}
		}
		if rng.IntN(3) > 0 {
			m.Classes = []string{}
			for range rng.IntN(3) {
				m.Classes = append(m.Classes, pickS())
			}
		}
		sameBagJSON(t, m)
	}
	base := wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 2, Instances: [][]float64{{0.5, 1}}, Labels: []int{}}
	sameBagJSON(t, base)
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		m := base
		m.Instances = [][]float64{{0.5, 1}, {0, bad}}
		if _, err := m.MarshalJSON(); err == nil {
			t.Errorf("feature %v written", bad)
		}
		sameBagJSON(t, m)
		m.Instances, m.SparseInstances = nil, []mil.SparseVec{{Idx: []int32{1}, Val: []float64{bad}}}
		sameBagJSON(t, m)
	}
}

// TestBagJSONMatchesReflectionOnMSCV2: every MSCV2 bag, labeled and not,
// dense and sparse, is written as encoding/json writes it.
func TestBagJSONMatchesReflectionOnMSCV2(t *testing.T) {
	ds, err := dataset.Load("../../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		t.Fatal(err)
	}
	for i := range ds.Bags {
		b := ds.Bags[i]
		sameBagJSON(t, wire.NewBagMessage(&b, ds.Name, ds.Dim, ds.Classes, i%2 == 0))
		b.Labels = nil
		for _, x := range b.Instances {
			b.Sparse = append(b.Sparse, mil.SparseOf(x))
		}
		b.Instances = nil
		sameBagJSON(t, wire.NewBagMessage(&b, ds.Name, ds.Dim, ds.Classes, false))
	}
}

// TestAppendFloatMatchesStrconv: the short-decimal fast path of the JSON
// number formatting gives encoding/json's bytes (strconv's shortest
// digits) for short decimals of every length up to and past the fast
// path's nine places, around the edges of its range (10⁻⁶, 2²², powers of
// ten and their float neighbours) and for arbitrary float bits. Catches a
// fast path that writes a longer form than the shortest, a rounded-off
// digit, or a number outside its range in plain decimal.
func TestAppendFloatMatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var cases []float64
	for places := range 13 {
		p := math.Pow(10, float64(places))
		for range 20000 {
			cases = append(cases, float64(rng.Int64N(int64(5e6*p)))/p, -float64(rng.Int64N(int64(p)))/p)
		}
	}
	edges := []float64{1e-6, 1 << 22, 1e-7, 0.1, 1, 10, 1e6, 4194303.999999999, 4194303.9999999995, 0.000999999999, 0.0009999999995}
	for e := -7; e <= 8; e++ {
		edges = append(edges, math.Pow(10, float64(e)))
	}
	for _, x := range edges {
		lo, hi := x, x
		for range 50 {
			lo, hi = math.Nextafter(lo, 0), math.Nextafter(hi, math.Inf(1))
			cases = append(cases, lo, hi, -lo)
		}
		cases = append(cases, x)
	}
	for range 200000 {
		cases = append(cases, math.Float64frombits(rng.Uint64()), rng.Float64(), rng.Float64()*float64(1<<23))
	}
	var buf bytes.Buffer
	for _, x := range cases {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		buf.Reset()
		want, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		m := wire.BagMessage{Instances: [][]float64{{x}}}
		got, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		// {"schema_version":0,"id":"","dim":0,"instances":[[X]]}
		const head, tail = `{"schema_version":0,"id":"","dim":0,"instances":[[`, `]]}`
		if g := got[len(head) : len(got)-len(tail)]; !bytes.Equal(g, want) {
			t.Fatalf("%v (%s): wrote %s, encoding/json %s", x, strconv.FormatUint(math.Float64bits(x), 16), g, want)
		}
	}
}

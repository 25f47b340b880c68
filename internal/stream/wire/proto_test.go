package wire_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/schemaref"
)

// protoDiffer compares the binary decoder on m's binary encoding with the
// reference validator on m's JSON encoding: the same verdict, the same
// reason, the same message. The documented differences: the binary form
// has no "instances absent" apart from "zero instances", so m without
// instances of either form is compared with m with zero dense instances
// (an empty bag in both), and zero instances of one form beside the other
// with none of it; and no null, so a sparse instance's nil idx or val is
// compared as an empty one.
func protoDiffer(v *wire.Validator, ref *schemaref.Validator, m *wire.BagMessage) string {
	got, err := v.DecodeBagAs(wire.ContentTypeProtobuf, m.AppendProto(nil))
	gr, _ := wire.ReasonOf(err)
	jm := *m
	if len(jm.Instances) == 0 {
		jm.Instances = nil
	}
	if len(jm.SparseInstances) == 0 {
		jm.SparseInstances = nil
	}
	if jm.Instances == nil && jm.SparseInstances == nil {
		jm.Instances = [][]float64{}
	}
	// Nor can it say "no regions" apart from "zero regions", nor "no
	// params" apart from "zero params".
	if len(jm.Regions) == 0 {
		jm.Regions = nil
	}
	if f := jm.Featurizer; f != nil && len(f.Params) == 0 && f.Params != nil {
		g := *f
		g.Params = nil
		jm.Featurizer = &g
	}
	if jm.SparseInstances != nil {
		jm.SparseInstances = slices.Clone(jm.SparseInstances)
		for k, sv := range jm.SparseInstances {
			if sv.Idx == nil {
				jm.SparseInstances[k].Idx = []int32{}
			}
			if sv.Val == nil {
				jm.SparseInstances[k].Val = []float64{}
			}
		}
	}
	raw, merr := json.Marshal(&jm)
	if merr != nil {
		// JSON cannot carry a NaN or an infinity; the binary form can,
		// and its decoder refuses it as DecodeBag refuses "NaN".
		if gr != wire.ReasonNonFinite {
			return fmt.Sprintf("json.Marshal fails (%v) but the binary decoder says %q %v", merr, gr, err)
		}
		return ""
	}
	want, wantErr := ref.DecodeBag(raw)
	wr, _ := wire.ReasonOf(wantErr)
	switch {
	case (err == nil) != (wantErr == nil) || gr != wr:
		return fmt.Sprintf("%s: binary %q %v; reference %q %v", raw, gr, err, wr, wantErr)
	case err != nil:
		return ""
	}
	if d := sameMessage(got, want); d != "" {
		return fmt.Sprintf("%s: %s", raw, d)
	}
	return ""
}

// randomBag returns a bag message near the valid ones, with every kind of
// fault the checks know.
func randomBag(rng *rand.Rand) wire.BagMessage {
	pick := func(vs ...int) int { return vs[rng.IntN(len(vs))] }
	m := wire.BagMessage{SchemaVersion: pick(1, 1, 1, 0, 2), ID: []string{"b", "b", "", "\xff", "é", strings.Repeat("x", 257)}[rng.IntN(6)],
		Source: []string{"", "s", "s\xfe"}[rng.IntN(3)], Dim: pick(2, 2, 2, 1, 0, -1)}
	if rng.IntN(20) > 0 {
		m.Instances = [][]float64{}
		for range rng.IntN(4) {
			row := make([]float64, pick(2, 2, 2, 1, 0))
			for j := range row {
				row[j] = []float64{0.5, -1, 0, math.Copysign(0, -1), 5e-324, math.NaN(), math.Inf(1), 1e300}[pick(0, 1, 2, 3, 4, 0, 1, 2, 5, 6, 7)]
			}
			if rng.IntN(30) == 0 {
				row = nil
			}
			m.Instances = append(m.Instances, row)
		}
	}
	m.Classes = [][]string{nil, {}, {"a"}, {"a", "b"}, {"a", "b\xff", "c"}}[rng.IntN(5)]
	if rng.IntN(2) == 0 {
		m.Labels = []int{}
		for range rng.IntN(3) {
			m.Labels = append(m.Labels, pick(0, 1, 2, -1))
		}
	}
	if rng.IntN(3) == 0 {
		m.InstanceLabels = []int{}
		for range rng.IntN(4) {
			m.InstanceLabels = append(m.InstanceLabels, pick(-1, 0, 1, 2, -2))
		}
	}
	return m
}

// TestProtoBagMatchesJSON: a bag sent in the binary encoding is accepted,
// refused and classified as the same bag in JSON is by the reference
// validator, and decodes to the same message (floats bit for bit, nil and
// empty labels apart, U+FFFD for invalid UTF-8). Catches a check the
// binary path skips (NaN, dimension, label range or order, sizes, schema
// version, id length), a reason given in another order, and a field lost
// or confused by the encoder or the decoder.
func TestProtoBagMatchesJSON(t *testing.T) {
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	rng := rand.New(rand.NewPCG(11, 12))
	for range 10000 {
		m := randomBag(rng)
		if d := protoDiffer(v, ref, &m); d != "" {
			t.Fatalf("%+v: %s", m, d)
		}
	}
}

// TestProtoBagMatchesJSONSparse is TestProtoBagMatchesJSON for sparse
// bags: every fault of a sparse instance (order, repeats, negative or out
// of range indices, values short or extra, NaN, ±Inf), both encodings in
// one bag, gets the reason the reference gives its JSON, and a valid one
// decodes to the same message. Catches a sparse check the binary path
// skips and an index or value lost or confused by the encoder or decoder.
func TestProtoBagMatchesJSONSparse(t *testing.T) {
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	rng := rand.New(rand.NewPCG(13, 14))
	reasons := map[wire.Reason]int{}
	for range 10000 {
		m := randomSparseBag(rng)
		if d := protoDiffer(v, ref, &m); d != "" {
			t.Fatalf("%+v: %s", m, d)
		}
		_, err := v.DecodeBagProto(m.AppendProto(nil))
		r, _ := wire.ReasonOf(err)
		reasons[r]++
	}
	for _, r := range []wire.Reason{"", wire.ReasonEmptyBag, wire.ReasonNonFinite, wire.ReasonSchema, wire.ReasonDimension, wire.ReasonLabels} {
		if reasons[r] == 0 {
			t.Errorf("no generated sparse bag gets reason %q", r)
		}
	}
	t.Logf("reasons: %v", reasons)
}

// TestProtoBagSparseFaultsOfTheEncoding: what only the binary form of a
// sparse instance can get wrong. Catches an index above 2^32-1 truncated
// (as a generated reader would) instead of refused, one above 2^31-1 let
// through or wrapped negative, a field of the wrong wire type taken as
// another, a partial double, an unknown field in a sparse instance let
// through or ranked above a NaN, and unpacked indices or values read
// otherwise than packed ones.
func TestProtoBagSparseFaultsOfTheEncoding(t *testing.T) {
	v, _ := wire.NewValidator(0)
	good := wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 4, SparseInstances: []mil.SparseVec{{Idx: []int32{0, 3}, Val: []float64{1, 2}}}}
	base := slices.Clip(good.AppendProto(nil))
	if _, err := v.DecodeBagProto(base); err != nil {
		t.Fatal(err)
	}
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	inst := func(b []byte, inner ...[]byte) []byte {
		return protowire.AppendBytes(tag(b, 10, protowire.BytesType), slices.Concat(inner...))
	}
	idx := func(js ...uint64) []byte {
		var p []byte
		for _, j := range js {
			p = protowire.AppendVarint(p, j)
		}
		return protowire.AppendBytes(tag(nil, 1, protowire.BytesType), p)
	}
	val := func(fs ...float64) []byte {
		var p []byte
		for _, f := range fs {
			p = protowire.AppendFixed64(p, math.Float64bits(f))
		}
		return protowire.AppendBytes(tag(nil, 2, protowire.BytesType), p)
	}
	header := slices.Concat(protowire.AppendVarint(tag(nil, 1, protowire.VarintType), 1),
		protowire.AppendString(tag(nil, 2, protowire.BytesType), "b"), protowire.AppendVarint(tag(nil, 4, protowire.VarintType), 1<<32))
	unknown := protowire.AppendVarint(tag(nil, 9, protowire.VarintType), 7)
	for _, c := range []struct {
		name string
		raw  []byte
		want wire.Reason
	}{
		{"an empty sparse instance", inst(base), ""},
		{"index 2^31-1", inst(header, idx(math.MaxInt32), val(1)), ""},
		{"index 2^31", inst(header, idx(math.MaxInt32+1), val(1)), wire.ReasonSchema},
		{"index 2^32-1", inst(header, idx(math.MaxUint32), val(1)), wire.ReasonSchema},
		{"index 2^32", inst(header, idx(math.MaxUint32+1), val(1)), wire.ReasonMalformedJSON},
		{"unpacked index 2^32", inst(header, protowire.AppendVarint(tag(nil, 1, protowire.VarintType), math.MaxUint32+1), val(1)), wire.ReasonMalformedJSON},
		{"index 2^31 and a NaN", inst(header, idx(math.MaxInt32+1), val(math.NaN())), wire.ReasonNonFinite},
		{"index not below dim", inst(base, idx(4), val(1)), wire.ReasonDimension},
		{"indices descending", inst(base, idx(2, 1), val(1, 2)), wire.ReasonSchema},
		{"index repeated", inst(base, idx(1, 1), val(1, 2)), wire.ReasonSchema},
		{"more values than indices", inst(base, idx(1), val(1, 2)), wire.ReasonSchema},
		{"values without indices", inst(base, val(1)), wire.ReasonSchema},
		{"index as fixed32", inst(base, protowire.AppendFixed32(tag(nil, 1, protowire.Fixed32Type), 1), val(1)), wire.ReasonMalformedJSON},
		{"value as a varint", inst(base, idx(1), protowire.AppendVarint(tag(nil, 2, protowire.VarintType), 1)), wire.ReasonMalformedJSON},
		{"partial double", inst(base, idx(1), protowire.AppendBytes(tag(nil, 2, protowire.BytesType), []byte{1, 2, 3})), wire.ReasonMalformedJSON},
		{"truncated sparse instance", inst(base, idx(1), val(1))[:len(base)+4], wire.ReasonMalformedJSON},
		{"sparse instances as a varint", protowire.AppendVarint(tag(base, 10, protowire.VarintType), 1), wire.ReasonMalformedJSON},
		{"unknown field in a sparse instance", inst(base, idx(1), val(1), unknown), wire.ReasonSchema},
		{"unknown field in the sparse instance with a NaN", inst(base, idx(1), val(math.NaN()), unknown), wire.ReasonNonFinite},
		{"unknown field and an index not below dim", inst(base, idx(9), val(1), unknown), wire.ReasonSchema},
		{"dense and sparse", protowire.AppendBytes(tag(base, 5, protowire.BytesType), protowire.AppendBytes(tag(nil, 1, protowire.BytesType), make([]byte, 32))), wire.ReasonSchema},
	} {
		_, err := v.DecodeBagProto(c.raw)
		if r, _ := wire.ReasonOf(err); r != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, r, err, c.want)
		}
	}
	// Unpacked indices and values, split over several fields, are read
	// as packed ones are.
	unpacked := slices.Concat(protowire.AppendVarint(tag(nil, 1, protowire.VarintType), 1), protowire.AppendString(tag(nil, 2, protowire.BytesType), "b"),
		protowire.AppendVarint(tag(nil, 4, protowire.VarintType), 4),
		inst(nil, protowire.AppendVarint(tag(nil, 1, protowire.VarintType), 0), protowire.AppendFixed64(tag(nil, 2, protowire.Fixed64Type), math.Float64bits(1)),
			idx(3), val(2)))
	got, err := v.DecodeBagProto(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := v.DecodeBagProto(base)
	if d := sameMessage(got, want); d != "" {
		t.Error(d)
	}
}

// TestProtoBagMatchesJSONOnMSCV2: every MSCV2 bag, labeled and not, with
// and without instance labels, decodes from the binary encoding to the
// message DecodeBag makes of its JSON. Catches a loss of precision or of a
// row on real data, which the small random bags may not show.
func TestProtoBagMatchesJSONOnMSCV2(t *testing.T) {
	ds, err := dataset.Load("../../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := wire.NewValidator(1 << 20)
	for i := range ds.Bags {
		m := wire.NewBagMessage(&ds.Bags[i], "mscv2", ds.Dim, ds.Classes, i%2 == 0)
		if i%3 == 0 {
			m.Labels, m.Classes = nil, nil
		}
		raw, _ := json.Marshal(&m)
		want, err := v.DecodeBag(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.DecodeBagProto(m.AppendProto(nil))
		if err != nil {
			t.Fatalf("bag %s: %v", m.ID, err)
		}
		if d := sameMessage(got, want); d != "" {
			t.Fatalf("bag %s: %s", m.ID, d)
		}
	}
}

// TestProtoBagFaultsOfTheEncoding: what only the binary form can get
// wrong. Catches a malformed message decoded as if it were whole (a
// truncated field, a length past the end, a partial double), a repeated
// singular field or invalid UTF-8 read one way when readers differ (last
// wins, first wins, replaced), a field of the wrong wire type taken as
// another, and an unknown field let through or ranked above the faults
// more specific than the schema's.
func TestProtoBagFaultsOfTheEncoding(t *testing.T) {
	v, _ := wire.NewValidator(0)
	good := wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 2, Instances: [][]float64{{1, 2}, {3, 4}}, Classes: []string{"a", "b"}, Labels: []int{1}}
	base := slices.Clip(good.AppendProto(nil)) // the cases append to it
	if _, err := v.DecodeBagProto(base); err != nil {
		t.Fatal(err)
	}
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	str := func(b []byte, num protowire.Number, s string) []byte {
		return protowire.AppendString(tag(b, num, protowire.BytesType), s)
	}
	instance := func(b []byte, inner []byte) []byte {
		return protowire.AppendBytes(tag(b, 5, protowire.BytesType), inner)
	}
	packed := func(fs ...float64) []byte {
		var p []byte
		for _, f := range fs {
			p = protowire.AppendFixed64(p, math.Float64bits(f))
		}
		return protowire.AppendBytes(tag(nil, 1, protowire.BytesType), p)
	}
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	unknown := protowire.AppendVarint(tag(nil, 99, protowire.VarintType), 7)
	nanRow := instance(nil, packed(1, math.NaN()))
	for _, c := range []struct {
		name string
		raw  []byte
		want wire.Reason
	}{
		{"truncated", base[:len(base)-1], wire.ReasonMalformedJSON},
		{"length past the end", cat(base, []byte{byte(2<<3 | 2), 50, 'x'}), wire.ReasonMalformedJSON},
		{"bad tag", cat(base, []byte{0}), wire.ReasonMalformedJSON},
		{"id repeated", str(base, 2, "c"), wire.ReasonMalformedJSON},
		{"dim repeated", protowire.AppendVarint(tag(base, 4, protowire.VarintType), 2), wire.ReasonMalformedJSON},
		{"id as a varint", protowire.AppendVarint(tag(base, 2, protowire.VarintType), 1), wire.ReasonMalformedJSON},
		{"invalid UTF-8 class", str(base, 6, "c\xff"), wire.ReasonMalformedJSON},
		{"partial double", instance(base, protowire.AppendBytes(tag(nil, 1, protowire.BytesType), []byte{1, 2, 3})), wire.ReasonMalformedJSON},
		{"labels as fixed32", protowire.AppendFixed32(tag(base, 7, protowire.Fixed32Type), 1), wire.ReasonMalformedJSON},
		{"features as a varint", instance(base, protowire.AppendVarint(tag(nil, 1, protowire.VarintType), 1)), wire.ReasonMalformedJSON},
		{"unknown field", cat(base, unknown), wire.ReasonSchema},
		{"unknown field in an instance", instance(base, cat(packed(1, 2), unknown)), wire.ReasonSchema},
		{"unknown field and a NaN", cat(base, unknown, nanRow), wire.ReasonNonFinite},
		{"unknown field in the instance with the NaN", instance(base, cat(packed(1, math.NaN()), unknown)), wire.ReasonNonFinite},
		{"unknown field and a short row", cat(base, unknown, instance(nil, packed(1))), wire.ReasonSchema},
		{"unknown field and a label out of range", cat(base, unknown, protowire.AppendVarint(tag(nil, 7, protowire.VarintType), 5)), wire.ReasonSchema},
		{"unknown field, then truncated", cat(base, unknown)[:len(base)+len(unknown)-1], wire.ReasonMalformedJSON},
		{"unpacked feature row", instance(base, protowire.AppendFixed64(tag(nil, 1, protowire.Fixed64Type), math.Float64bits(1))), wire.ReasonDimension},
		{"empty", nil, wire.ReasonEmptyBag},
		{"no instances", str(protowire.AppendVarint(tag(protowire.AppendVarint(tag(nil, 1, protowire.VarintType), 1), 4, protowire.VarintType), 2), 2, "b"), wire.ReasonEmptyBag},
	} {
		_, err := v.DecodeBagProto(c.raw)
		if r, _ := wire.ReasonOf(err); r != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, r, err, c.want)
		}
	}
	// Unpacked features and labels are read as packed ones are.
	unpacked := cat(protowire.AppendVarint(tag(nil, 1, protowire.VarintType), 1), str(nil, 2, "b"),
		protowire.AppendVarint(tag(nil, 4, protowire.VarintType), 2),
		instance(nil, cat(protowire.AppendFixed64(tag(nil, 1, protowire.Fixed64Type), math.Float64bits(1)), packed(2))),
		instance(nil, packed(3, 4)), str(nil, 6, "a"), str(nil, 6, "b"), protowire.AppendVarint(tag(nil, 7, protowire.VarintType), 1))
	got, err := v.DecodeBagProto(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := v.DecodeBagProto(base)
	if d := sameMessage(got, want); d != "" {
		t.Error(d)
	}
	// The size limit, on the binary size.
	lim, _ := wire.NewValidator(len(base) - 1)
	if _, err := lim.DecodeBagProto(base); !strings.Contains(fmt.Sprint(err), "oversize") {
		t.Errorf("over the limit: %v", err)
	}
	// A JSON message is not decoded as binary, nor the reverse: the header
	// says which.
	raw, _ := json.Marshal(&good)
	if _, err := v.DecodeBagAs(wire.ContentTypeProtobuf, raw); err == nil {
		t.Error("JSON accepted as binary")
	}
	// (Other content types are refused: TestDecodeBagHeaders.)
	for _, ct := range []string{"", wire.ContentTypeJSON} {
		if _, err := v.DecodeBagAs(ct, raw); err != nil {
			t.Errorf("content type %q: %v", ct, err)
		}
	}
}

// TestProtoBagRowsIndependent: the decoded rows share one allocation; an
// append to one must not write into the next. Catches rows cut without a
// capacity bound.
func TestProtoBagRowsIndependent(t *testing.T) {
	v, _ := wire.NewValidator(0)
	m := wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 2, Instances: [][]float64{{1, 2}, {3, 4}}}
	got, err := v.DecodeBagProto(m.AppendProto(nil))
	if err != nil {
		t.Fatal(err)
	}
	_ = append(got.Instances[0], 9)
	if got.Instances[1][0] != 3 {
		t.Errorf("row 1 overwritten: %v", got.Instances)
	}
	// Sparse instances alike, from either decoder.
	sm := wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 4, SparseInstances: []mil.SparseVec{{Idx: []int32{0}, Val: []float64{1}}, {Idx: []int32{2}, Val: []float64{3}}}}
	js, _ := json.Marshal(&sm)
	for name, decode := range map[string]func() (*wire.BagMessage, error){
		"binary": func() (*wire.BagMessage, error) { return v.DecodeBagProto(sm.AppendProto(nil)) },
		"JSON":   func() (*wire.BagMessage, error) { return v.DecodeBag(js) },
	} {
		got, err := decode()
		if err != nil {
			t.Fatal(err)
		}
		_ = append(got.SparseInstances[0].Idx, 9)
		_ = append(got.SparseInstances[0].Val, 9)
		if !reflect.DeepEqual(got.SparseInstances, sm.SparseInstances) {
			t.Errorf("%s: sparse instance 1 overwritten: %v", name, got.SparseInstances)
		}
	}
}

// FuzzDecodeBagProto: whatever the bytes, the binary decoder does not
// panic, and a bag it accepts is one the reference validator accepts, as
// the same message, in JSON. Catches the binary path letting through what
// JSON refuses.
func FuzzDecodeBagProto(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 40 {
		m := randomBag(rng)
		f.Add(m.AppendProto(nil))
		m = randomSparseBag(rng)
		f.Add(m.AppendProto(nil))
	}
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := v.DecodeBagProto(raw)
		if err != nil {
			if _, ok := wire.ReasonOf(err); !ok {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		js, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.DecodeBag(js)
		if err != nil {
			t.Fatalf("binary accepted, JSON %s refused: %v", js, err)
		}
		if d := sameMessage(got, want); d != "" {
			t.Fatal(d)
		}
		if d := protoDiffer(v, ref, got); d != "" {
			t.Fatal(d)
		}
	})
}

// TestAnnotationProtoMatchesJSON: an annotation read back from the binary
// encoding is the one read back from its JSON (times in UTC, nil and empty
// lists alike), and what MarshalJSON refuses (a NaN or infinite score, a
// year it cannot write) MarshalProto refuses, so a model fault is one in
// either format. Catches a field dropped, misnumbered or confused between
// the encoder and DecodeAnnotation.
func TestAnnotationProtoMatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	strs := []string{"", "b", "a\"b", "caf\u00e9", "bad\xffutf8", "01HZX3Y4Z5ABCDEFGHJKMNPQRS"}
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1e-7, 1e21, 5e-324, math.MaxFloat64, 1.0 / 3}
	times := []time.Time{time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 5*3600)),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 1, time.UTC), time.Unix(0, 0)}
	pickS := func() string { return strs[rng.IntN(len(strs))] }
	pickF := func() []float64 {
		v := make([]float64, rng.IntN(4))
		for i := range v {
			v[i] = floats[rng.IntN(len(floats))]
		}
		return v
	}
	pickI := func() []int { return []int{rng.IntN(5) - 1, math.MaxInt64, math.MinInt64}[:rng.IntN(4)] }
	norm := func(a wire.AnnotationMessage) wire.AnnotationMessage {
		if a.Classes == nil {
			a.Classes = []string{}
		}
		if a.BagLabels == nil {
			a.BagLabels = []int{}
		}
		if a.BagScores == nil {
			a.BagScores = []float64{}
		}
		if len(a.InstanceLabels) == 0 {
			a.InstanceLabels = nil
		}
		if len(a.InstanceScores) == 0 {
			a.InstanceScores = nil
		}
		for i, x := range a.InstanceScores {
			if x == nil {
				a.InstanceScores[i] = []float64{}
			}
		}
		a.AnnotatedAt = a.AnnotatedAt.UTC()
		if a.IngestedAt != nil {
			ti := a.IngestedAt.UTC()
			a.IngestedAt = &ti
		}
		return a
	}
	for range 4000 {
		a := wire.AnnotationMessage{SchemaVersion: rng.IntN(3), BagID: pickS(), Source: pickS(), Model: pickS(), ModelVersion: pickS(), ModelID: pickS(),
			Mode: pickS(), InstanceLabels: pickI(), BagLabels: pickI(), BagScores: pickF(), LatencyMS: floats[rng.IntN(len(floats))],
			AnnotatedAt: times[rng.IntN(len(times))], Annotator: pickS()}
		for range rng.IntN(3) {
			a.Classes = append(a.Classes, pickS())
		}
		for range rng.IntN(3) {
			a.InstanceScores = append(a.InstanceScores, pickF())
		}
		if rng.IntN(2) == 0 {
			ti := times[rng.IntN(len(times))]
			a.IngestedAt = &ti
		}
		js, err := a.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		bin, err := a.MarshalAs(wire.FormatProtobuf)
		if err != nil {
			t.Fatal(err)
		}
		want, err := wire.DecodeAnnotation(wire.ContentTypeJSON, js)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wire.DecodeAnnotation(wire.ContentTypeProtobuf, bin)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("binary:\n%+v\nJSON:\n%+v", g, w)
		}
		if m := math.Float64bits(got.LatencyMS); m != math.Float64bits(want.LatencyMS) {
			t.Fatalf("latency %v, JSON %v", got.LatencyMS, want.LatencyMS)
		}
	}
	base := wire.AnnotationMessage{SchemaVersion: 1, BagID: "b", Model: "k", ModelVersion: "v1", Mode: "inductive", Classes: []string{"a"},
		BagLabels: []int{0}, BagScores: []float64{0.5}, AnnotatedAt: times[0]}
	for _, bad := range []func(a *wire.AnnotationMessage){
		func(a *wire.AnnotationMessage) { a.BagScores = []float64{math.NaN()} },
		func(a *wire.AnnotationMessage) { a.InstanceScores = [][]float64{{0.5}, {math.Inf(1)}} },
		func(a *wire.AnnotationMessage) { a.LatencyMS = math.Inf(-1) },
		func(a *wire.AnnotationMessage) { a.AnnotatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		func(a *wire.AnnotationMessage) { ti := time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC); a.IngestedAt = &ti },
	} {
		a := base
		bad(&a)
		_, jerr := a.MarshalJSON()
		_, perr := a.MarshalProto()
		if jerr == nil || perr == nil {
			t.Errorf("%+v: JSON %v, binary %v", a, jerr, perr)
		}
	}
	// Truncated binary is an error, not a partial annotation.
	bin, _ := base.MarshalProto()
	if _, err := wire.DecodeAnnotation(wire.ContentTypeProtobuf, bin[:len(bin)-1]); err == nil {
		t.Error("truncated annotation decoded")
	}
}

// BenchmarkBagFormats: decoding an MSCV2 bag message, JSON against binary;
// and encoding an MSCV2-sized annotation.
func BenchmarkBagFormats(b *testing.B) {
	ds, err := dataset.Load("../../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		b.Fatal(err)
	}
	js := make([][]byte, len(ds.Bags))
	bin := make([][]byte, len(ds.Bags))
	for i := range ds.Bags {
		m := wire.NewBagMessage(&ds.Bags[i], "mscv2", ds.Dim, ds.Classes, false)
		js[i], _ = json.Marshal(&m)
		bin[i] = m.AppendProto(nil)
	}
	v, _ := wire.NewValidator(0)
	msgs := make([]wire.BagMessage, len(ds.Bags))
	for i := range ds.Bags {
		msgs[i] = wire.NewBagMessage(&ds.Bags[i], "mscv2", ds.Dim, ds.Classes, false)
	}
	for _, f := range []wire.Format{wire.FormatJSON, wire.FormatProtobuf} {
		b.Run("encode-"+string(f), func(b *testing.B) {
			for i := range b.N {
				if _, err := msgs[i%len(msgs)].Marshal(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("decode-json", func(b *testing.B) {
		for i := range b.N {
			if _, err := v.DecodeBag(js[i%len(js)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-protobuf", func(b *testing.B) {
		for i := range b.N {
			if _, err := v.DecodeBagProto(bin[i%len(bin)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

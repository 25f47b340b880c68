package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/schemaref"
)

// The tests of this file were written against the survivors of a mutation
// run of proto.go and bagdecode.go (docs/mutation.md says which test kills
// which); each names the fault it catches.

// TestProtoEncodersAllocateOnce: AppendProto and MarshalProto size their
// buffer before writing, so that encoding a message is one allocation and
// never a copy of the half-written message. Each case makes one term of
// the size estimate large enough to matter. Catches a term of the estimate
// dropped, subtracted or divided, or the room left in the caller's buffer
// miscounted (the buffer then grows, and the message is copied, while it
// is written, or a buffer with room enough is replaced).
func TestProtoEncodersAllocateOnce(t *testing.T) {
	long := strings.Repeat("x", 300)
	rows := func(k, d int) [][]float64 {
		r := make([][]float64, k)
		for i := range r {
			r[i] = make([]float64, d)
			for j := range r[i] {
				r[i][j] = float64(i*d + j)
			}
		}
		return r
	}
	many := func(k int, s string) []string {
		v := make([]string, k)
		for i := range v {
			v[i] = s
		}
		return v
	}
	ints := func(k int) []int { return make([]int, k) }
	for _, c := range []struct {
		name string
		m    wire.BagMessage
	}{
		{"long id", wire.BagMessage{SchemaVersion: 1, ID: long, Dim: 1, Instances: rows(1, 1)}},
		{"long source", wire.BagMessage{SchemaVersion: 1, ID: "b", Source: long, Dim: 1, Instances: rows(1, 1)}},
		{"long rows", wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 40, Instances: rows(3, 40)}},
		{"many short rows", wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 1, Instances: rows(60, 1)}},
		{"many empty rows", wire.BagMessage{SchemaVersion: 1, ID: "b", Instances: rows(60, 0)}},
		{"many classes", wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 1, Instances: rows(1, 1), Classes: many(40, "class")}},
		{"many labels", wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 1, Instances: rows(1, 1), Labels: ints(100)}},
		{"many instance labels", wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 1, Instances: rows(1, 1), InstanceLabels: ints(100)}},
	} {
		m := c.m
		if a := testing.AllocsPerRun(20, func() { _ = m.AppendProto(nil) }); a != 1 {
			t.Errorf("AppendProto, %s: %v allocations, want 1", c.name, a)
		}
	}
	at := time.Date(2026, 11, 25, 20, 0, 0, 123, time.UTC)
	base := wire.AnnotationMessage{SchemaVersion: 1, BagID: "b", Model: "k", ModelVersion: "v1", Mode: "inductive", AnnotatedAt: at, IngestedAt: &at}
	for _, c := range []struct {
		name string
		set  func(a *wire.AnnotationMessage)
	}{
		{"long bag id", func(a *wire.AnnotationMessage) { a.BagID = long }},
		{"long source", func(a *wire.AnnotationMessage) { a.Source = long }},
		{"long model", func(a *wire.AnnotationMessage) { a.Model = long }},
		{"long model version", func(a *wire.AnnotationMessage) { a.ModelVersion = long }},
		{"long model id", func(a *wire.AnnotationMessage) { a.ModelID = long }},
		{"long annotator", func(a *wire.AnnotationMessage) { a.Annotator = long }},
		{"many bag scores", func(a *wire.AnnotationMessage) { a.BagScores = make([]float64, 40) }},
		{"many bag labels", func(a *wire.AnnotationMessage) { a.BagLabels = ints(200) }},
		{"many instance labels", func(a *wire.AnnotationMessage) { a.InstanceLabels = ints(200) }},
		{"many classes", func(a *wire.AnnotationMessage) { a.Classes = many(60, "c") }},
		{"long class", func(a *wire.AnnotationMessage) { a.Classes = []string{long} }},
		{"long instance scores", func(a *wire.AnnotationMessage) { a.InstanceScores = rows(3, 40) }},
		{"many short instance scores", func(a *wire.AnnotationMessage) { a.InstanceScores = rows(60, 1) }},
	} {
		a := base
		c.set(&a)
		if n := testing.AllocsPerRun(20, func() { _, _ = a.MarshalProto() }); n != 1 {
			t.Errorf("MarshalProto, %s: %v allocations, want 1", c.name, n)
		}
	}
	// A buffer with room enough is appended to, not replaced.
	m := wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 2, Instances: rows(2, 2)}
	buf := make([]byte, 0, 4096)
	if a := testing.AllocsPerRun(20, func() { _ = m.AppendProto(buf) }); a != 0 {
		t.Errorf("AppendProto into a large enough buffer: %v allocations, want 0", a)
	}
	// Re-encoding into the buffer of the last encoding of the same message,
	// the loop of a producer that reuses its buffer, allocates nothing.
	reuse := m.AppendProto(nil)[:0]
	if a := testing.AllocsPerRun(20, func() { _ = m.AppendProto(reuse) }); a != 0 {
		t.Errorf("AppendProto into its own last buffer (capacity %d): %v allocations, want 0", cap(reuse), a)
	}
	// A full buffer is grown once, by what the message needs beyond it.
	m = wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 8, Instances: rows(30, 8)}
	full := bytes.Repeat([]byte{7}, 1100)
	if a := testing.AllocsPerRun(20, func() { _ = m.AppendProto(full) }); a != 1 {
		t.Errorf("AppendProto after %d bytes: %v allocations, want 1", len(full), a)
	}
	if got, want := m.AppendProto(full), append(slices.Clip(full), m.AppendProto(nil)...); !bytes.Equal(got, want) {
		t.Errorf("AppendProto after %d bytes: the prefix or the message changed", len(full))
	}
}

// TestProtoFormatSelection: the format named is the format written and
// parsed. Catches Marshal, ContentType or Format.Set choosing the other
// format (or not setting it).
func TestProtoFormatSelection(t *testing.T) {
	m := wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}}
	js, _ := json.Marshal(&m)
	for _, c := range []struct {
		f    wire.Format
		ct   string
		want []byte
	}{
		{wire.FormatJSON, wire.ContentTypeJSON, js},
		{wire.FormatProtobuf, wire.ContentTypeProtobuf, m.AppendProto(nil)},
	} {
		got, err := m.Marshal(c.f)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("Marshal(%s) = %q, %v; want %q", c.f, got, err, c.want)
		}
		if ct := c.f.ContentType(); ct != c.ct {
			t.Errorf("%s: content type %q, want %q", c.f, ct, c.ct)
		}
		var f wire.Format
		if err := f.Set(string(c.f)); err != nil || f != c.f {
			t.Errorf("Set(%q): %q, %v", c.f, f, err)
		}
	}
	f := wire.FormatProtobuf
	if err := f.Set("xml"); err == nil || f != wire.FormatProtobuf {
		t.Errorf("Set(xml): %q, %v; want an error and the format unchanged", f, err)
	}
}

// TestProtoBagEdgesOfTheEncoding: the bag decoder at the edges the
// encoding tests do not reach. Catches a message of exactly the size limit
// refused; schema_version (field 1) or instance_labels (field 9, the
// last) of a wrong wire type taken for an unknown field (a schema fault)
// instead of a malformed message; a packed field split in two (which the
// format allows) losing its first part; and error messages naming the
// wrong byte.
func TestProtoBagEdgesOfTheEncoding(t *testing.T) {
	good := wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 2, Instances: [][]float64{{1, 2}, {3, 4}}, Classes: []string{"a", "b", "c"}}
	base := slices.Clip(good.AppendProto(nil))
	lim, _ := wire.NewValidator(len(base))
	if _, err := lim.DecodeBagProto(base); err != nil {
		t.Errorf("a message of exactly the limit: %v", err)
	}
	v, _ := wire.NewValidator(0)
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	packed := func(b []byte, num protowire.Number, zigzag bool, xs ...int64) []byte {
		var p []byte
		for _, x := range xs {
			if zigzag {
				p = protowire.AppendVarint(p, protowire.EncodeZigZag(x))
			} else {
				p = protowire.AppendVarint(p, uint64(x))
			}
		}
		return protowire.AppendBytes(tag(b, num, protowire.BytesType), p)
	}
	for _, c := range []struct {
		name string
		raw  []byte
		want wire.Reason
		msg  string // in the error
	}{
		{"schema_version as bytes", protowire.AppendString(tag(base, 1, protowire.BytesType), "1"), wire.ReasonMalformedJSON, fmt.Sprintf("field 1 at byte %d: wire type 2", len(base))},
		{"instance_labels as fixed32", protowire.AppendFixed32(tag(base, 9, protowire.Fixed32Type), 1), wire.ReasonMalformedJSON, fmt.Sprintf("field 9 at byte %d: wire type 5", len(base))},
		{"bad tag", append(slices.Clip(base), 0), wire.ReasonMalformedJSON, fmt.Sprintf("field tag at byte %d", len(base))},
		{"truncated id", append(tag(base, 2, protowire.BytesType), 5, 'x'), wire.ReasonMalformedJSON, fmt.Sprintf("field 2 at byte %d", len(base))},
	} {
		_, err := v.DecodeBagProto(c.raw)
		if r, _ := wire.ReasonOf(err); r != c.want || !strings.Contains(fmt.Sprint(err), c.msg) {
			t.Errorf("%s: %q %v, want %q with %q", c.name, r, err, c.want, c.msg)
		}
	}
	// Labels and instance labels, each packed in two parts.
	split := packed(packed(packed(packed(base, 7, false, 0), 7, false, 2), 9, true, 0), 9, true, 2)
	got, err := v.DecodeBagProto(split)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Labels, []int{0, 2}) || !slices.Equal(got.InstanceLabels, []int{0, 2}) {
		t.Errorf("split packed fields: labels %v, instance labels %v; want [0 2] and [0 2]", got.Labels, got.InstanceLabels)
	}
}

// TestProtoAnnotationEdges: DecodeAnnotation reads what a Protocol Buffers
// writer may write although MarshalProto does not, and the timestamp
// range at its ends. Catches unpacked (varint) labels skipped as unknown;
// a packed label field split in two losing its first part; an unknown
// field inside a Scores or Timestamp message refused instead of skipped;
// nanos = 1e9 accepted; years 0 and 9999 refused by MarshalProto; and an
// empty bag_scores field written (MarshalProto writes what proto3 writes:
// nothing for an empty repeated field).
func TestProtoAnnotationEdges(t *testing.T) {
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	varint := func(b []byte, num protowire.Number, x uint64) []byte {
		return protowire.AppendVarint(tag(b, num, protowire.VarintType), x)
	}
	sub := func(b []byte, num protowire.Number, inner []byte) []byte {
		return protowire.AppendBytes(tag(b, num, protowire.BytesType), inner)
	}
	unknown := varint(nil, 99, 7)
	score := protowire.AppendFixed64(nil, math.Float64bits(0.25))
	for _, c := range []struct {
		name string
		raw  []byte
		want wire.AnnotationMessage // compared on the fields set below
		bad  bool
	}{
		{"unpacked labels", varint(varint(varint(nil, 11, 2), 11, 3), 9, protowire.EncodeZigZag(-1)),
			wire.AnnotationMessage{BagLabels: []int{2, 3}, InstanceLabels: []int{-1}}, false},
		{"split packed labels", sub(sub(sub(sub(nil, 11, []byte{2}), 11, []byte{3, 4}), 9, []byte{1}), 9, []byte{2}),
			wire.AnnotationMessage{BagLabels: []int{2, 3, 4}, InstanceLabels: []int{-1, 1}}, false},
		{"unknown field in scores", sub(nil, 10, slices.Concat(unknown, sub(nil, 1, score))),
			wire.AnnotationMessage{InstanceScores: [][]float64{{0.25}}}, false},
		{"unknown field in a timestamp", sub(nil, 15, slices.Concat(varint(nil, 1, 60), unknown, varint(nil, 2, 5))),
			wire.AnnotationMessage{AnnotatedAt: time.Unix(60, 5).UTC()}, false},
		{"nanos of a second", sub(nil, 15, varint(nil, 2, 1e9)), wire.AnnotationMessage{}, true},
		{"nanos just below a second", sub(nil, 15, varint(nil, 2, 1e9-1)), wire.AnnotationMessage{AnnotatedAt: time.Unix(0, 1e9-1).UTC()}, false},
	} {
		got, err := wire.DecodeAnnotation(wire.ContentTypeProtobuf, c.raw)
		switch {
		case c.bad:
			if err == nil {
				t.Errorf("%s: decoded %+v, want an error", c.name, got)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		w := c.want
		if !slices.Equal(got.BagLabels, w.BagLabels) && w.BagLabels != nil || !slices.Equal(got.InstanceLabels, w.InstanceLabels) ||
			len(got.InstanceScores) != len(w.InstanceScores) || len(w.InstanceScores) > 0 && !slices.Equal(got.InstanceScores[0], w.InstanceScores[0]) ||
			!got.AnnotatedAt.Equal(w.AnnotatedAt) {
			t.Errorf("%s: %+v, want %+v", c.name, got, w)
		}
	}
	for _, y := range []int{0, 9999} {
		at := time.Date(y, 6, 1, 0, 0, 0, 0, time.UTC)
		a := wire.AnnotationMessage{SchemaVersion: 1, BagID: "b", AnnotatedAt: at, IngestedAt: &at}
		bin, err := a.MarshalProto()
		if err != nil {
			t.Errorf("year %d: %v", y, err)
			continue
		}
		got, err := wire.DecodeAnnotation(wire.ContentTypeProtobuf, bin)
		if err != nil || !got.AnnotatedAt.Equal(at) || got.IngestedAt == nil || !got.IngestedAt.Equal(at) {
			t.Errorf("year %d: %+v, %v", y, got, err)
		}
	}
	// The exact encoding of a small annotation without bag scores.
	at := time.Unix(7, 0)
	a := wire.AnnotationMessage{SchemaVersion: 1, BagID: "b", BagScores: []float64{}, AnnotatedAt: at}
	want := sub(protowire.AppendString(tag(varint(nil, 1, 1), 2, protowire.BytesType), "b"), 15, varint(nil, 1, 7))
	if got, err := a.MarshalProto(); err != nil || !bytes.Equal(got, want) {
		t.Errorf("MarshalProto = %x, %v; want %x", got, err, want)
	}
}

// TestDecodeBagStringBytesAtTheEdges: in a JSON string, byte 0x80 (the
// lowest that is not ASCII, alone a stray continuation byte) is invalid
// UTF-8, before and after an escape; hex digits 'a' and 'A' (the lowest
// letters) are digits of a \u escape. Catches the non-ASCII test moved
// past 0x80 (a stray 0x80 accepted as a character) and the letter ranges
// of hex4 starting after 'a' or 'A' (a valid escape refused).
func TestDecodeBagStringBytesAtTheEdges(t *testing.T) {
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	for _, c := range []struct {
		id   string // the JSON text of the id
		want string // the decoded id; "" if refused as malformed
	}{
		{"\"a\x80\"", ""},
		{"\"\\n\x80\"", ""},
		{`"\u00aa"`, "\u00aa"},
		{`"\u00AA"`, "\u00aa"},
		{`"x\u00aa"`, "x\u00aa"},
	} {
		raw := []byte(bag(`"id":` + c.id))
		m, err := v.DecodeBag(raw)
		r, _ := wire.ReasonOf(err)
		switch {
		case c.want == "" && r != wire.ReasonMalformedJSON:
			t.Errorf("id %q: %v %q, want malformed_json", c.id, err, r)
		case c.want != "" && (err != nil || m.ID != c.want):
			t.Errorf("id %q: %+v %v, want id %q", c.id, m, err, c.want)
		}
		if d := differ(v, ref, raw); d != "" {
			t.Errorf("id %q: %s", c.id, d)
		}
	}
}

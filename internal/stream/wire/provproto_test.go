package wire_test

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/schemaref"
)

// randomProvenance gives m a media bag's provenance near the valid one: a
// photo's boxes and masks (a random mask over one frame, its box) or a
// document's spans, one region per instance, a media identity and a
// featurizer; and now and then each fault the checks know (a region too
// many or too few, a mask short of its frame or of another frame, a box
// not holding its mask, a negative or disordered span, a hash not 64
// lower-case hex digits, a negative size, an empty featurizer name,
// invalid UTF-8 in a string).
func randomProvenance(rng *rand.Rand, m *wire.BagMessage) {
	pick := func(vs ...int) int { return vs[rng.IntN(len(vs))] }
	rare := func() bool { return rng.IntN(40) == 0 }
	if rng.IntN(8) > 0 {
		data := make([]byte, rng.IntN(6))
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		md := media.Identify(data, []string{"", "images/a.jpg", "caf\u00e9.png", "x\xff"}[rng.IntN(4)], []string{"", "image/png", "text/plain; charset=utf-8"}[rng.IntN(3)])
		switch {
		case rare():
			md.SHA256 = strings.ToUpper(md.SHA256)
		case rare():
			md.SHA256 = md.SHA256[:63]
		case rare():
			md.SHA256 = ""
		case rare():
			md.Size = -int64(pick(1, 7))
		}
		m.Media = &md
	}
	if rng.IntN(8) > 0 {
		f := media.Featurizer{Name: "photo-regions", Version: []string{"1", "", "2.0"}[rng.IntN(3)]}
		if rare() {
			f.Name = ""
		}
		for range rng.IntN(4) {
			if f.Params == nil {
				f.Params = map[string]string{}
			}
			f.Params[[]string{"segmenter", "k", "", "b\xfe"}[rng.IntN(4)]] = []string{"slic", "", "0.5", "\xff"}[rng.IntN(4)]
		}
		m.Featurizer = &f
	}
	n := len(m.Instances) + len(m.SparseInstances)
	if rng.IntN(6) == 0 {
		return // no regions
	}
	n += []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, -1}[rng.IntN(14)]
	photo := rng.IntN(2) == 0
	w, h := pick(1, 3, 4), pick(1, 2, 3)
	for k := range max(n, 0) {
		var r media.Region
		if photo {
			mask := make([]bool, w*h)
			for i := range mask {
				mask[i] = rng.IntN(3) == 0
			}
			rle := media.EncodeMask(mask, w, h)
			switch {
			case rare():
				rle.Counts[len(rle.Counts)-1]++ // past the frame
			case rare() && k > 0:
				rle = media.EncodeMask(append(mask, false), w*h+1, 1) // another frame
			case rare():
				rle.Counts = append(rle.Counts, 0) // an empty run not first
			}
			if rng.IntN(10) > 0 {
				r.Mask = &rle
			}
			if rng.IntN(10) > 0 {
				b := rle.BBox()
				if rle.Area() == 0 {
					b = [4]int{0, 0, 0, 0}
				}
				switch {
				case rare():
					b[0]++ // the mask outside its box
				case rare():
					b[2] = -1
				}
				r.BBox = &b
			}
		} else {
			s := pick(0, 3, 40)
			e := s + pick(0, 5, 12)
			if rare() {
				s, e = e+1, s
			}
			if rng.IntN(10) > 0 {
				r.Span = &media.Span{Start: s, End: e}
			}
			if rng.IntN(10) > 0 {
				r.ByteSpan = &media.Span{Start: 2 * s, End: 2*e + pick(0, 1)}
				if rare() {
					r.ByteSpan.Start = -1
				}
			}
		}
		m.Regions = append(m.Regions, r)
	}
}

// validBase returns a valid bag of dense or sparse instances, labeled or
// not: the provenance faults, checked last, show only on such bags.
func validBase(rng *rand.Rand) wire.BagMessage {
	m := wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 4, Classes: []string{"a", "b"}}
	n := 1 + rng.IntN(4)
	for range n {
		if rng.IntN(2) == 0 {
			m.Instances = append(m.Instances, []float64{rng.Float64(), 0, -1, 1e-300})
		} else {
			m.SparseInstances = append(m.SparseInstances, mil.SparseVec{Idx: []int32{1, 3}, Val: []float64{rng.Float64(), 2}})
		}
	}
	if len(m.Instances) > 0 && len(m.SparseInstances) > 0 {
		m.SparseInstances = nil
	}
	if rng.IntN(2) == 0 {
		m.Labels = []int{rng.IntN(2)}
	}
	return m
}

// TestProtoMediaBagMatchesJSON: a media bag, its provenance valid or
// faulty, is accepted, refused and classified in the binary encoding as
// the same bag in JSON is by the reference validator (the JSON Schema), and
// decodes to the same message, provenance included. Catches a provenance
// field lost, misnumbered or confused between encoder and decoder, a check
// of the JSON path the binary one skips (a hash's form, a negative size or
// count, an empty name, a mask outside its box or frame, a region too
// many), and a fault given another reason.
func TestProtoMediaBagMatchesJSON(t *testing.T) {
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	rng := rand.New(rand.NewPCG(33, 34))
	reasons := map[wire.Reason]int{}
	withRegions := 0
	for i := range 10000 {
		var m wire.BagMessage
		switch i % 5 {
		case 0:
			m = randomBag(rng)
		case 1:
			m = randomSparseBag(rng)
		default:
			m = validBase(rng)
		}
		randomProvenance(rng, &m)
		if d := protoDiffer(v, ref, &m); d != "" {
			t.Fatalf("%+v: %s", m, d)
		}
		got, err := v.DecodeBagProto(m.AppendProto(nil))
		r, _ := wire.ReasonOf(err)
		reasons[r]++
		if err == nil && len(got.Regions) > 0 {
			withRegions++
			if !reflect.DeepEqual(got.Regions, m.Regions) || (got.Media == nil) != (m.Media == nil) {
				t.Fatalf("provenance %+v %+v, sent %+v %+v", got.Media, got.Regions, m.Media, m.Regions)
			}
		}
	}
	t.Logf("reasons: %v; %d accepted with regions", reasons, withRegions)
	if reasons[""] < 1000 || reasons[wire.ReasonSchema] < 1000 || withRegions < 1000 {
		t.Errorf("the generator is off: %v, %d accepted with regions", reasons, withRegions)
	}
}

// TestProtoMediaBagsOfTheDevSets: a photo's bag (a 4x3 frame cut in two)
// and a document's (spans in code points and bytes) go through
// BagMessage.Marshal in the binary format, are read back by
// DecodeBagHeaders, and equal what the JSON round trip gives. Catches the
// binary format refusing or thinning a media bag.
func TestProtoMediaBagsOfTheDevSets(t *testing.T) {
	v, _ := wire.NewValidator(0)
	doc := wire.BagMessage{SchemaVersion: 1, ID: "doc-1", Source: "media", Dim: 1 << 18,
		SparseInstances: []mil.SparseVec{{Idx: []int32{7, 90000}, Val: []float64{0.6, -0.8}}, {Idx: []int32{}, Val: []float64{}}},
		Classes:         []string{"sci.space"}, Labels: []int{0},
		Media:      &media.Media{SHA256: strings.Repeat("ab", 32), Size: 30, URI: "docs/a.txt", ContentType: "text/plain; charset=utf-8"},
		Featurizer: &media.Featurizer{Name: "text-hash", Version: "1", Params: map[string]string{"segmenter": "windows", "dim": "262144"}},
		Regions: []media.Region{{Span: &media.Span{Start: 0, End: 12}, ByteSpan: &media.Span{Start: 0, End: 14}},
			{Span: &media.Span{Start: 13, End: 20}, ByteSpan: &media.Span{Start: 15, End: 22}}}}
	for _, m := range []wire.BagMessage{provenanceBag(), doc} {
		bin, err := m.Marshal(wire.FormatProtobuf)
		if err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		got, err := v.DecodeBagHeaders(wire.ContentTypeProtobuf, "1", bin)
		if err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		js, err := m.Marshal(wire.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		want, err := v.DecodeBag(js)
		if err != nil {
			t.Fatal(err)
		}
		if d := sameMessage(got, want); d != "" {
			t.Fatalf("%s: %s", m.ID, d)
		}
		if got.Featurizer == nil || !got.Featurizer.Equal(*m.Featurizer) || len(got.Regions) != len(m.Regions) {
			t.Fatalf("%s: provenance %+v %+v", m.ID, got.Featurizer, got.Regions)
		}
	}
}

// TestProtoProvenanceFaultsOfTheEncoding: what only the binary form of a
// provenance can get wrong. Catches a box or mask size of the wrong
// length read as if whole, a media, featurizer, mask or string field met
// twice read one way (readers differ), a params key repeated, invalid
// UTF-8, a field of another wire type, and an unknown field inside a
// provenance message let through.
func TestProtoProvenanceFaultsOfTheEncoding(t *testing.T) {
	v, _ := wire.NewValidator(0)
	good := wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 2, Instances: [][]float64{{1, 2}}}
	base := slices.Clip(good.AppendProto(nil))
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	msg := func(num protowire.Number, parts ...[]byte) []byte {
		return protowire.AppendBytes(tag(nil, num, protowire.BytesType), slices.Concat(parts...))
	}
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(tag(nil, num, protowire.BytesType), s)
	}
	vint := func(num protowire.Number, x uint64) []byte {
		return protowire.AppendVarint(tag(nil, num, protowire.VarintType), x)
	}
	packed := func(num protowire.Number, xs ...uint64) []byte {
		var p []byte
		for _, x := range xs {
			p = protowire.AppendVarint(p, x)
		}
		return protowire.AppendBytes(tag(nil, num, protowire.BytesType), p)
	}
	sha := str(1, strings.Repeat("0f", 32))
	goodMedia := msg(11, sha, vint(2, 5))
	region := func(parts ...[]byte) []byte { return msg(13, parts...) }
	mask := func(parts ...[]byte) []byte { return msg(2, parts...) }
	goodMask := mask(packed(1, 1, 2), packed(2, 0, 2))
	for _, c := range []struct {
		name string
		raw  []byte
		want wire.Reason
	}{
		{"a valid media and region", slices.Concat(base, goodMedia, region(packed(1, 0, 0, 2, 1), goodMask)), ""},
		{"a box of 0,0,0,0", slices.Concat(base, region(packed(1, 0, 0, 0, 0))), ""},
		{"unpacked box", slices.Concat(base, region(vint(1, 0), vint(1, 0), vint(1, 2), vint(1, 1), goodMask)), ""},
		{"a box of 3 numbers", slices.Concat(base, region(packed(1, 0, 0, 2))), wire.ReasonSchema},
		{"a mask size of 1 number", slices.Concat(base, region(mask(packed(1, 2), packed(2, 0, 2)))), wire.ReasonSchema},
		{"a mask size of 3 numbers", slices.Concat(base, region(mask(packed(1, 1, 2, 1), packed(2, 0, 2)))), wire.ReasonSchema},
		{"a negative count", slices.Concat(base, region(mask(packed(1, 1, 2), packed(2, 0, uint64(1<<64-1))))), wire.ReasonSchema},
		{"media without its hash", slices.Concat(base, msg(11, vint(2, 5))), wire.ReasonSchema},
		{"unknown field in media", slices.Concat(base, msg(11, sha, vint(9, 1))), wire.ReasonSchema},
		{"unknown field in a region", slices.Concat(base, region(vint(7, 1))), wire.ReasonSchema},
		{"unknown field in a span", slices.Concat(base, region(msg(3, vint(1, 1), vint(2, 2), vint(3, 3)))), wire.ReasonSchema},
		{"unknown field in a params entry", slices.Concat(base, msg(12, str(1, "x"), msg(3, str(1, "k"), str(2, "v"), vint(3, 1)))), wire.ReasonSchema},
		{"featurizer without a name", slices.Concat(base, msg(12, str(2, "1"))), wire.ReasonSchema},
		{"media twice", slices.Concat(base, goodMedia, goodMedia), wire.ReasonMalformedJSON},
		{"featurizer twice", slices.Concat(base, msg(12, str(1, "x")), msg(12, str(1, "y"))), wire.ReasonMalformedJSON},
		{"sha256 twice", slices.Concat(base, msg(11, sha, sha)), wire.ReasonMalformedJSON},
		{"mask twice", slices.Concat(base, region(goodMask, goodMask)), wire.ReasonMalformedJSON},
		{"span start twice", slices.Concat(base, region(msg(3, vint(1, 1), vint(1, 2)))), wire.ReasonMalformedJSON},
		{"a params key twice", slices.Concat(base, msg(12, str(1, "x"), msg(3, str(1, "k"), str(2, "v")), msg(3, str(1, "k"), str(2, "w")))), wire.ReasonMalformedJSON},
		{"invalid UTF-8 in the uri", slices.Concat(base, msg(11, sha, str(3, "a\xff"))), wire.ReasonMalformedJSON},
		{"media as a varint", slices.Concat(base, vint(11, 1)), wire.ReasonMalformedJSON},
		{"size as a string", slices.Concat(base, msg(11, sha, str(2, "5"))), wire.ReasonMalformedJSON},
		{"a region truncated", slices.Concat(base, region(packed(1, 0, 0, 2, 1)))[:len(base)+4], wire.ReasonMalformedJSON},
		{"a mask with a bad length", slices.Concat(base, region([]byte{2<<3 | 2, 9, 1})), wire.ReasonMalformedJSON},
	} {
		_, err := v.DecodeBagProto(c.raw)
		if r, _ := wire.ReasonOf(err); r != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, r, err, c.want)
		}
	}
}

// TestAnnotationProvenanceProtoMatchesJSON: an annotation's provenance
// (the annotated bag's media, featurizer and regions) read back from the
// binary encoding is what its JSON gives. Catches the annotation's
// provenance fields dropped or confused with the bag's.
func TestAnnotationProvenanceProtoMatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	for range 2000 {
		m := validBase(rng)
		randomProvenance(rng, &m)
		a := wire.AnnotationMessage{SchemaVersion: 1, BagID: m.ID, Model: "orlr", ModelVersion: "v1", Mode: "inductive",
			Classes: []string{"a"}, BagLabels: []int{}, BagScores: []float64{}, AnnotatedAt: time.Unix(1, 2).UTC(),
			Media: m.Media, Featurizer: m.Featurizer, Regions: m.Regions}
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
		// JSON writes no empty params nor regions; invalid UTF-8 is
		// U+FFFD in both.
		if !reflect.DeepEqual(got.Media, want.Media) || !reflect.DeepEqual(got.Featurizer, want.Featurizer) || !reflect.DeepEqual(got.Regions, want.Regions) {
			g, _ := json.Marshal([]any{got.Media, got.Featurizer, got.Regions})
			w, _ := json.Marshal([]any{want.Media, want.Featurizer, want.Regions})
			t.Fatalf("binary %s\nJSON   %s", g, w)
		}
	}
}

// FuzzDecodeMediaBagProto is FuzzDecodeBagProto seeded with media bags:
// whatever the bytes, a bag with provenance the binary decoder accepts is
// one the reference accepts in JSON, as the same message.
func FuzzDecodeMediaBagProto(f *testing.F) {
	rng := rand.New(rand.NewPCG(37, 38))
	for range 40 {
		m := validBase(rng)
		randomProvenance(rng, &m)
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
	})
}

package wire_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/schemaref"
)

// provenanceBag is a photo bag of two instances over a 4x3 frame: region 0
// the first column, region 1 the rest.
func provenanceBag() wire.BagMessage {
	left := make([]bool, 12)
	for y := range 3 {
		left[y*4] = true
	}
	right := make([]bool, 12)
	for i := range right {
		right[i] = !left[i]
	}
	m0, m1 := media.EncodeMask(left, 4, 3), media.EncodeMask(right, 4, 3)
	b0, b1 := m0.BBox(), m1.BBox()
	md := media.Identify([]byte("photo bytes"), "images/a.jpg", "image/jpeg")
	return wire.BagMessage{SchemaVersion: 1, ID: "photo-1", Dim: 2, Instances: [][]float64{{1, 2}, {3, 4}},
		Classes: []string{"a", "b"}, Labels: []int{0, 1},
		Media:      &md,
		Featurizer: &media.Featurizer{Name: "photo-regions", Version: "1", Params: map[string]string{"segmenter": "regions"}},
		Regions:    []media.Region{{BBox: &b0, Mask: &m0}, {BBox: &b1, Mask: &m1}}}
}

// TestProvenanceRoundTrip: a bag with its provenance is encoded (as
// encoding/json would), decoded by the typed decoder and the reference
// alike, and comes back whole.
func TestProvenanceRoundTrip(t *testing.T) {
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	m := provenanceBag()
	raw, err := m.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	type plain wire.BagMessage // encoding/json's reflective form
	want, _ := json.Marshal(plain(m))
	if string(raw) != string(want) {
		t.Fatalf("encoded\n%s\nencoding/json\n%s", raw, want)
	}
	if d := differ(v, ref, raw); d != "" {
		t.Fatal(d)
	}
	got, err := v.DecodeBag(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Media, m.Media) || !reflect.DeepEqual(got.Featurizer, m.Featurizer) || !reflect.DeepEqual(got.Regions, m.Regions) {
		t.Fatalf("decoded %+v %+v %+v", got.Media, got.Featurizer, got.Regions)
	}
	a := wire.AnnotationMessage{SchemaVersion: 1, BagID: "photo-1", Model: "orlr", ModelVersion: "v1", Mode: "inductive",
		Classes: []string{"a", "b"}, InstanceLabels: []int{0, 1}, BagLabels: []int{0, 1}, BagScores: []float64{1, 1},
		Media: m.Media, Featurizer: m.Featurizer, Regions: m.Regions}
	sameAnnotationJSON(t, a)
	ab, _ := a.MarshalJSON()
	doc, err := schemaref.DecodeDocument(ab)
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.Schemas().Annotation.Validate(doc); err != nil {
		t.Fatalf("annotation with provenance against its schema: %v", err)
	}
}

// TestProvenanceFaultsMatchReference: every fault of a provenance
// property is a schema fault, named alike by the typed decoder and the
// JSON Schema reference.
func TestProvenanceFaultsMatchReference(t *testing.T) {
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	seed := provenanceBag()
	base, _ := seed.AppendJSON(nil)
	s := string(base)
	sha := provenanceBag().Media.SHA256
	for _, tc := range []struct{ from, to string }{
		{`"size":11`, `"size":-1`},
		{`"size":11`, `"size":11.5`},
		{`"size":11`, `"size":1.1e1`},
		{`"size":11`, `"size":"11"`},
		{`"size":11`, `"size":11,"extra":1`},
		{sha, strings.ToUpper(sha)},
		{sha, sha[:10]},
		{`"uri":"images/a.jpg",`, `"uri":"images/a.jpg","uri":"b",`}, // a key repeated inside
		{`"uri":"images/a.jpg"`, `"uri":7`},
		{`"name":"photo-regions"`, `"name":""`},
		{`"version":"1"`, `"version":1`},
		{`"params":{"segmenter":"regions"}`, `"params":{"segmenter":3}`},
		{`"params":{"segmenter":"regions"}`, `"params":[]`},
		{`"counts":[0,3,9]`, `"counts":[0,3,8]`},   // counts short of the frame
		{`"counts":[0,3,9]`, `"counts":[0,-3,15]`}, // negative run
		{`"size":[3,4],"counts":[0,3,9]`, `"size":[3,4,1],"counts":[0,3,9]`},
		{`"size":[3,4],"counts":[0,3,9]`, `"size":[3,5],"counts":[0,3,12]`}, // another frame than region 1's
		{`"bbox":[0,0,1,3]`, `"bbox":[0,0,1]`},
		{`"bbox":[0,0,1,3]`, `"bbox":[1,0,2,3]`}, // the mask outside its box
		{`"bbox":[0,0,1,3]`, `"bbox":[0,0,1,3],"span":{"start":2,"end":1}`},
		{`"bbox":[0,0,1,3]`, `"bbox":[0,0,1,3],"span":{"start":0}`},
		{`"bbox":[0,0,1,3]`, `"bbox":[0,0,1,3],"colour":"red"`},
		{`"regions":[`, `"regions":[{},`}, // three regions for two instances
		{`"regions":[`, `"regions":null,"x":[`},
		{`"media":{`, `"media":null,"x":{`},
		{`"featurizer":{`, `"featurizer":{"name":"x","version":"1"},"featurizer":{`}, // repeated key
	} {
		if !strings.Contains(s, tc.from) {
			t.Fatalf("seed lacks %q: %s", tc.from, s)
		}
		bad := strings.Replace(s, tc.from, tc.to, 1)
		if d := differ(v, ref, []byte(bad)); d != "" {
			t.Errorf("%s → %s: %s", tc.from, tc.to, d)
		}
		if _, err := v.DecodeBag([]byte(bad)); err == nil {
			t.Errorf("%s → %s accepted", tc.from, tc.to)
		}
	}
}

// TestProvenanceThroughProtobuf: a media bag is encoded in the binary
// format with its provenance, never refused nor sent without its regions.
func TestProvenanceThroughProtobuf(t *testing.T) {
	v, _ := wire.NewValidator(0)
	m := provenanceBag()
	bin, err := m.Marshal(wire.FormatProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.DecodeBagProto(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Media, m.Media) || !reflect.DeepEqual(got.Featurizer, m.Featurizer) || !reflect.DeepEqual(got.Regions, m.Regions) {
		t.Fatalf("decoded %+v %+v %+v", got.Media, got.Featurizer, got.Regions)
	}
}

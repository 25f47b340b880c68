package media_test

import (
	"errors"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media"
)

func TestFeaturizerStringAndCheck(t *testing.T) {
	a := media.Featurizer{Name: "photo-regions", Version: "1", Params: map[string]string{"segments": "200", "merge": "a&b"}}
	b := media.Featurizer{Name: "photo-regions", Version: "1", Params: map[string]string{"merge": "a&b", "segments": "200"}}
	if a.String() != b.String() || a.String() != "photo-regions@1?merge=a%26b&segments=200" {
		t.Fatalf("canonical forms %q, %q", a.String(), b.String())
	}
	if err := media.Check(a, b); err != nil {
		t.Fatal(err)
	}
	for _, g := range []media.Featurizer{
		{Name: "photo-regions", Version: "2", Params: a.Params},
		{Name: "photo-regions", Version: "1", Params: map[string]string{"segments": "100", "merge": "a&b"}},
		{Name: "photo-regions", Version: "1"},
		{},
	} {
		if err := media.Check(a, g); !errors.Is(err, media.ErrFeaturizer) {
			t.Errorf("Check(%v, %v) = %v, want ErrFeaturizer", a, g, err)
		}
	}
	if err := media.Check(media.Featurizer{}, media.Featurizer{}); err != nil {
		t.Errorf("no featurizer on either side: %v", err)
	}
}

func TestIdentify(t *testing.T) {
	m := media.Identify([]byte("abc"), "a.txt", "text/plain")
	if m.SHA256 != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" || m.Size != 3 {
		t.Fatalf("%+v", m)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (media.Media{SHA256: "XYZ"}).Validate(); !errors.Is(err, media.ErrMedia) {
		t.Fatal(err)
	}
}

func TestRegionValidate(t *testing.T) {
	mask := make([]bool, 12)
	mask[5] = true // row 1, column 1 of a 4x3 frame
	r := media.EncodeMask(mask, 4, 3)
	for _, tc := range []struct {
		bbox [4]int
		ok   bool
	}{{[4]int{1, 1, 2, 2}, true}, {[4]int{0, 0, 4, 3}, true}, {[4]int{2, 1, 3, 2}, false}, {[4]int{0, 0, 5, 3}, false}, {[4]int{2, 0, 1, 3}, false}} {
		err := media.Region{BBox: &tc.bbox, Mask: &r}.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("bbox %v: %v", tc.bbox, err)
		}
	}
}

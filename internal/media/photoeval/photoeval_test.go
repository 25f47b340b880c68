package photoeval

import (
	"context"
	"testing"

	"github.com/mimlstream/mimlstream/internal/eval"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/mil"
)

// TestScoreHandWorked: a 4x2 photo, truth regions 1 (class 0) on the
// left half, 2 (class 1) on the right, one void pixel:
//
//	1 1 2 2
//	1 1 2 0
//
// Predicted regions: A = the first column, B = the rest.
func TestScoreHandWorked(t *testing.T) {
	tr := &truth{gt: []uint8{1, 1, 2, 2, 1, 1, 2, 0}, class: make([]int, 256),
		pixels: [][]int32{{0, 4}, {1, 2, 3, 5, 6, 7}}}
	for i := range tr.class {
		tr.class[i] = -1
	}
	tr.class[1], tr.class[2] = 0, 1
	for _, tc := range []struct {
		labels []int
		want   Counts
	}{
		// A=0, B=1: region 1 has 2 pixels of 0 and 2 of 1: a tie, the
		// lower class (0) wins: right; region 2 all 1: right. Pixels: 2 of
		// region 1's 4 and all 3 of region 2's.
		{[]int{0, 1}, Counts{Regions: 2, RegionsRight: 2, Pixels: 7, PixelsRight: 5}},
		// A=1, B=0: region 1 ties again (0 wins, right), region 2 is 0: wrong.
		{[]int{1, 0}, Counts{Regions: 2, RegionsRight: 1, Pixels: 7, PixelsRight: 2}},
		// Both 1: region 1 painted 1 (wrong), region 2 right.
		{[]int{1, 1}, Counts{Regions: 2, RegionsRight: 1, Pixels: 7, PixelsRight: 3}},
	} {
		got, err := tr.score(tc.labels, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("labels %v: %+v, want %+v", tc.labels, got, tc.want)
		}
	}
	if _, err := tr.score([]int{0}, 2); err == nil {
		t.Error("one label for two regions accepted")
	}
	if _, err := tr.score([]int{0, 2}, 2); err == nil {
		t.Error("label outside the classes accepted")
	}
}

// TestBuildSample builds testdata's three photos both ways: scored with
// their own instance labels, the ground-truth regions are perfect, the
// service's regions nearly so, and a wrong labelling scores lower.
func TestBuildSample(t *testing.T) {
	const manifest = "../../../testdata/msrc_v2_sample/bags.jsonl"
	if !photobag.IsPhotoManifest(manifest) {
		t.Fatal("the sample's bags.jsonl is not recognised as a photo manifest")
	}
	f, err := imagefeat.New(imagefeat.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	for _, gt := range []bool{true, false} {
		d, err := Build(context.Background(), manifest, Options{Featurizer: f, GTRegions: gt})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Dataset.Bags) != 3 || len(d.Dataset.Classes) != 23 {
			t.Fatalf("%d bags, %d classes", len(d.Dataset.Bags), len(d.Dataset.Classes))
		}
		test := make([]*mil.Bag, 3)
		preds := make([]measure.Prediction, 3)
		wrong := make([]measure.Prediction, 3)
		for i := range test {
			b := &d.Dataset.Bags[i]
			if err := b.Validate(imagefeat.Dim, 23); err != nil {
				t.Fatal(err)
			}
			test[i] = b
			preds[i].InstanceLabels = b.InstanceLabels
			wrong[i].InstanceLabels = make([]int, b.Len()) // all class 0 (building): in none of the three photos
		}
		m, err := d.Score(test, preds)
		if err != nil {
			t.Fatal(err)
		}
		if gt && (m[measure.InstanceAccuracy] != 1 || m[eval.PixelAccuracy] != 1) {
			t.Fatalf("ground-truth regions with their own labels: %v", m)
		}
		if !gt && (m[measure.InstanceAccuracy] < 0.99 || m[eval.PixelAccuracy] < 0.8) {
			t.Fatalf("service regions with their majority labels: %v", m)
		}
		if w, _ := d.Score(test, wrong); w[measure.InstanceAccuracy] != 0 || w[eval.PixelAccuracy] != 0 {
			t.Fatalf("a class in no photo scored %v", w)
		}
		if m, err := d.Score(test, make([]measure.Prediction, 3)); err != nil || len(m) != 0 {
			t.Fatalf("a bag-level model's predictions: %v, %v; want no instance measures", m, err)
		}
		t.Logf("gt regions %v: %d instances, best-case region accuracy %.3f, pixel accuracy %.3f", gt,
			d.Dataset.NumInstances(), m[measure.InstanceAccuracy], m[eval.PixelAccuracy])
	}
}

package streamtest

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

func TestCentroidOnMSCV2(t *testing.T) {
	ds, err := dataset.Load("../../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		t.Fatal(err)
	}
	m, err := CentroidKind().Fit(context.Background(), ds, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[int]int{}
	for _, b := range ds.Bags {
		for _, l := range b.InstanceLabels {
			counts[l]++
		}
	}
	maj := 0
	for _, c := range counts {
		maj = max(maj, c)
	}
	dummy := float64(maj) / float64(ds.NumInstances())
	ind := InstanceAccuracy(t, m, ds, models.Inductive)
	tr := InstanceAccuracy(t, m, ds, models.Transductive)
	t.Logf("instance accuracy: dummy %.3f, inductive %.3f, transductive %.3f", dummy, ind, tr)
	if ind < 2*dummy || tr < ind {
		t.Errorf("centroid model too weak to test the pipeline: dummy %.3f inductive %.3f transductive %.3f", dummy, ind, tr)
	}
	// Round trip through the envelope gives identical annotations.
	blob, err := models.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := models.NewRegistry(CentroidKind()).Decode(blob)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := InstanceAccuracy(t, m2, ds, models.Inductive), ind; a != b {
		t.Errorf("decoded model differs: %v vs %v", a, b)
	}
}

func TestCentroidAgainstBruteForce(t *testing.T) {
	ds := &mil.Dataset{Classes: []string{"a", "b", "c"}, Dim: 1, Bags: []mil.Bag{
		{ID: "1", Instances: [][]float64{{0}, {10}}, Labels: []int{0, 1}},
		{ID: "2", Instances: [][]float64{{0.2}}, Labels: []int{0}},
		{ID: "3", Instances: [][]float64{{20}}, Labels: []int{2}},
	}}
	m, err := CentroidKind().Fit(context.Background(), ds, models.FitOptions{Params: models.Params{"max_labels": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	// After refinement: class a holds 0 and 0.2, class b holds 10, c holds 20.
	want := [][]float64{{0.1}, {10}, {20}}
	for c, w := range want {
		if got := m.(*Model).st.Centroids[c][0]; math.Abs(got-w[0]) > 1e-12 {
			t.Errorf("centroid %d = %v, want %v", c, got, w[0])
		}
	}
	cases := []struct {
		bag  mil.Bag
		mode models.Mode
		want []int
		err  error
	}{
		{mil.Bag{ID: "x", Instances: [][]float64{{9}, {1}}}, models.Inductive, []int{1, 0}, nil},
		{mil.Bag{ID: "y", Instances: [][]float64{{9}, {19}}, Labels: []int{2}}, models.Transductive, []int{2, 2}, nil},
		{mil.Bag{ID: "z", Instances: [][]float64{{9}}, Labels: []int{0, 2}}, models.Transductive, nil, models.ErrLabelSetTooLarge},
		{mil.Bag{ID: "d", Instances: [][]float64{{9, 1}}}, models.Inductive, nil, models.ErrBadInput},
	}
	for _, c := range cases {
		a, err := m.Annotate(context.Background(), &c.bag, c.mode)
		if c.err != nil {
			if err == nil || !errors.Is(err, c.err) {
				t.Errorf("%s: err %v, want %v", c.bag.ID, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range c.want {
			if a.InstanceLabels[i] != c.want[i] {
				t.Errorf("%s: labels %v, want %v", c.bag.ID, a.InstanceLabels, c.want)
			}
		}
	}
}

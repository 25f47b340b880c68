package synth

import (
	"math/rand/v2"
	"testing"
)

func TestToyTables(t *testing.T) {
	cases := []struct {
		table int
		sizes [3]int
		sigma float64
	}{
		{1, [3]int{1000, 1000, 1000}, 1},
		{2, [3]int{1000, 2000, 4000}, 1},
		{3, [3]int{1000, 2000, 4000}, 0.5},
	}
	for _, tc := range cases {
		toy, err := ToyTable(tc.table)
		if err != nil {
			t.Fatal(err)
		}
		xs, labels := toy.Generate(rand.New(rand.NewPCG(1, 1)))
		var count [3]int
		for _, l := range labels {
			count[l]++
		}
		if count != tc.sizes {
			t.Errorf("table %d: category sizes %v, want %v", tc.table, count, tc.sizes)
		}
		if len(xs) != len(labels) || len(xs[0]) != 3 || toy.Sigma != tc.sigma {
			t.Errorf("table %d: %d points of dim %d, sigma %v", tc.table, len(xs), len(xs[0]), toy.Sigma)
		}
	}
	if _, err := ToyTable(4); err == nil {
		t.Error("table 4 accepted")
	}
}

func TestMIMLBagLabelsAreUnionOfInstanceLabels(t *testing.T) {
	ds, err := MSCV2Like(1).Generate(rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Bags) != 591 || ds.Dim != 48 || len(ds.Classes) != 23 {
		t.Fatalf("shape %d bags, dim %d, %d classes", len(ds.Bags), ds.Dim, len(ds.Classes))
	}
	if n := ds.NumInstances(); n < 1500 || n > 2100 {
		t.Errorf("%d instances, want about 1770", n)
	}
	for _, b := range ds.Bags {
		if err := b.Validate(ds.Dim, len(ds.Classes)); err != nil {
			t.Fatal(err)
		}
		for _, l := range b.InstanceLabels {
			if !b.HasLabel(l) {
				t.Fatalf("bag %s: instance label %d not in bag labels %v", b.ID, l, b.Labels)
			}
		}
	}
}

func TestBlobs(t *testing.T) {
	g := Blobs{Bags: 200, Classes: 4, Dim: 3, MaxInstances: 5, CentreScale: 3}
	ds := g.Generate(rand.New(rand.NewPCG(1, 1)))
	again := g.Generate(rand.New(rand.NewPCG(1, 1)))
	if len(ds.Bags) != 200 || ds.Dim != 3 || len(ds.Classes) != 4 {
		t.Fatalf("shape %d bags, dim %d, %d classes", len(ds.Bags), ds.Dim, len(ds.Classes))
	}
	sizes := map[int]bool{}
	for i, b := range ds.Bags {
		if err := b.Validate(ds.Dim, len(ds.Classes)); err != nil {
			t.Fatal(err)
		}
		sizes[len(b.Instances)] = true
		union := map[int]bool{}
		for _, l := range b.InstanceLabels {
			union[l] = true
		}
		if len(union) != len(b.Labels) {
			t.Fatalf("bag %s: labels %v, instance labels %v", b.ID, b.Labels, b.InstanceLabels)
		}
		for j, l := range b.Labels {
			if !union[l] || (j > 0 && b.Labels[j-1] >= l) {
				t.Fatalf("bag %s: labels %v not the sorted union of %v", b.ID, b.Labels, b.InstanceLabels)
			}
		}
		if again.Bags[i].Instances[0][0] != b.Instances[0][0] {
			t.Fatal("same seed, different data")
		}
	}
	for n := 1; n <= 5; n++ {
		if !sizes[n] {
			t.Errorf("no bag of %d instances in 200", n)
		}
	}
	if sizes[0] || sizes[6] {
		t.Errorf("bag sizes %v outside 1..5", sizes)
	}
}

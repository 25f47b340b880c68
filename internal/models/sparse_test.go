package models

import (
	"reflect"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// TestDataFor checks that a kind without a sparse path gets dense bags and
// one with it the data unchanged (catches a kind receiving Sparse bags it
// would read as empty, or a sparse kind paying for a dense copy).
func TestDataFor(t *testing.T) {
	d := &mil.Dataset{Name: "s", Classes: []string{"p"}, Dim: 3, Bags: []mil.Bag{
		{ID: "a", Sparse: []mil.SparseVec{{Idx: []int32{1}, Val: []float64{2}}}, Labels: []int{0}},
	}}
	if got := (Kind{Sparse: true}).DataFor(d); got != d {
		t.Fatal("a sparse kind got a copy")
	}
	got := (Kind{}).DataFor(d)
	if got.IsSparse() || len(got.Bags[0].Instances) != 1 || got.Bags[0].Instances[0][1] != 2 {
		t.Fatalf("dense kind got %+v", got.Bags[0])
	}
}

// TestBagFor: a kind without a sparse path (or a kind the registry does
// not know) gets a sparse bag dense, a sparse kind gets it as it is, and
// a dense bag is never copied. Catches the annotator handing a sparse bag
// to a model that reads Instances only, or densifying for a sparse kind.
func TestBagFor(t *testing.T) {
	sp := &mil.Bag{ID: "a", Sparse: []mil.SparseVec{{Idx: []int32{1}, Val: []float64{2}}, {Idx: []int32{}, Val: []float64{}}}, Labels: []int{0}}
	dn := &mil.Bag{ID: "d", Instances: [][]float64{{0, 2, 0}}}
	r := NewRegistry(Kind{Name: "sparse", Sparse: true}, Kind{Name: "dense"})
	for _, c := range []struct {
		kind      string
		in        *mil.Bag
		same      bool
		wantDense [][]float64
	}{
		{"sparse", sp, true, nil},
		{"sparse", dn, true, nil},
		{"dense", dn, true, nil},
		{"dense", sp, false, [][]float64{{0, 2, 0}, {0, 0, 0}}},
		{"unknown", sp, false, [][]float64{{0, 2, 0}, {0, 0, 0}}},
	} {
		got := r.BagFor(c.kind, c.in, 3)
		if (got == c.in) != c.same {
			t.Errorf("%s, bag %s: returned the bag itself %v, want %v", c.kind, c.in.ID, got == c.in, c.same)
		}
		if c.same {
			continue
		}
		if got.Sparse != nil || !reflect.DeepEqual(got.Instances, c.wantDense) || !reflect.DeepEqual(got.Labels, c.in.Labels) || got.ID != c.in.ID {
			t.Errorf("%s: got %+v, want dense %v", c.kind, got, c.wantDense)
		}
		if c.in.Sparse == nil || c.in.Instances != nil {
			t.Errorf("%s: the input bag changed: %+v", c.kind, c.in)
		}
	}
}

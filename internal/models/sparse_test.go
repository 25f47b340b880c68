package models

import (
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

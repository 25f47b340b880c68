package eval_test

import (
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/eval"
	"github.com/mimlstream/mimlstream/internal/mil"
)

func TestInherited(t *testing.T) {
	d := &mil.Dataset{Classes: []string{"a", "b", "c"}, Dim: 1, Bags: []mil.Bag{
		{ID: "x", Instances: [][]float64{{1}, {2}}, Labels: []int{0, 2}, InstanceLabels: []int{0, 0}},
		{ID: "empty", Instances: [][]float64{{3}}, Labels: []int{}},
		{ID: "unlabeled", Instances: [][]float64{{4}}},
	}}
	got := eval.Inherited(d)
	if len(got.Bags) != 1 {
		t.Fatalf("%d bags, want only the labeled one", len(got.Bags))
	}
	b := got.Bags[0]
	if !slices.Equal(b.InstanceLabels, []int{0, 2, 0, 2}) || b.Instances[1][0] != 1 || b.Instances[2][0] != 2 {
		t.Fatalf("%+v: each instance once per bag label, labeled with it (never its true label)", b)
	}
}

package modeltest

import (
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
)

func TestSeq(t *testing.T) {
	for _, tc := range []struct {
		lo, hi int
		want   []int
	}{{0, 3, []int{0, 1, 2}}, {5, 7, []int{5, 6}}, {4, 4, []int{}}} {
		if got := Seq(tc.lo, tc.hi); !slices.Equal(got, tc.want) {
			t.Errorf("Seq(%d, %d) = %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestNonNegative(t *testing.T) {
	ds := &mil.Dataset{Dim: 2, Bags: []mil.Bag{{Instances: [][]float64{{-3, 0.5}, {-1, 2}}}}}
	out := NonNegative(ds)
	want := [][]float64{{2, 1.5}, {0, 3}}
	for j, x := range out.Bags[0].Instances {
		if !slices.Equal(x, want[j]) {
			t.Errorf("instance %d = %v, want %v", j, x, want[j])
		}
	}
	if ds.Bags[0].Instances[0][0] != -3 {
		t.Error("NonNegative modified its input")
	}
}

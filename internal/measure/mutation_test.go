package measure

import (
	"math"
	"testing"
)

// TestHammingBagMergeBranches catches faults in the truth[i] < pred[j]
// branch of the merge (a class only in the truth, met before the next
// predicted class): no other test orders the sets so that the truth runs
// ahead, and a negated comparison or a skipped diff++ there would go
// unnoticed. truth {0,2}, prediction {2} differ in one class.
func TestHammingBagMergeBranches(t *testing.T) {
	for _, tc := range []struct {
		truth, pred []int
		want        float64
	}{
		{[]int{0, 2}, []int{2}, 1.0 / 4},
		{[]int{0, 1, 3}, []int{3}, 2.0 / 4},
		{[]int{2}, []int{0, 2}, 1.0 / 4},
	} {
		got, err := HammingBag(tc.truth, tc.pred, 4)
		if err != nil || got != tc.want {
			t.Errorf("HammingBag(%v, %v, 4) = %v, %v; want %v", tc.truth, tc.pred, got, err, tc.want)
		}
	}
}

// TestHammingBagAllSubsets compares the merge with the symmetric difference
// of bit masks over every pair of subsets of 4 classes, catching any fault
// in the merge's branches or its tail count that some pair exposes.
func TestHammingBagAllSubsets(t *testing.T) {
	const q = 4
	set := func(mask int) []int {
		var s []int
		for c := range q {
			if mask&(1<<c) != 0 {
				s = append(s, c)
			}
		}
		return s
	}
	for a := range 1 << q {
		for b := range 1 << q {
			want := 0
			for x := a ^ b; x != 0; x &= x - 1 {
				want++
			}
			got, err := HammingBag(set(a), set(b), q)
			if err != nil || math.Abs(got-float64(want)/q) > 1e-15 {
				t.Fatalf("HammingBag(%v, %v) = %v, %v; want %d/%d", set(a), set(b), got, err, want, q)
			}
		}
	}
}

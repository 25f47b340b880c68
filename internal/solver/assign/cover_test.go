package assign

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCoverMatchesEnumeration holds Cover to every labeling of n <= 6
// instances by k <= 4 labels that uses each label at least once, on 2,000
// random cost matrices (some of small integers, where costs tie): the same
// least total cost, and Cover's labeling has that cost and uses every label.
func TestCoverMatchesEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := range 2000 {
		k := 1 + rng.IntN(4)
		n := k + rng.IntN(7-k)
		cols := k + rng.IntN(3) // a stride wider than k, as MIMLCA's label copies
		cost := make([]float64, n*cols)
		for i := range cost {
			if trial%2 == 0 {
				cost[i] = rng.NormFloat64()
			} else {
				cost[i] = float64(rng.IntN(4))
			}
		}
		labels, total, err := Cover(cost, n, k, cols)
		if err != nil {
			t.Fatal(err)
		}
		best := math.Inf(1)
		y := make([]int, n)
		var walk func(i int)
		walk = func(i int) {
			if i == n {
				used := make([]bool, k)
				s := 0.0
				for j, t := range y {
					used[t] = true
					s += cost[j*cols+t]
				}
				for _, u := range used {
					if !u {
						return
					}
				}
				best = min(best, s)
				return
			}
			for t := range k {
				y[i] = t
				walk(i + 1)
			}
		}
		walk(0)
		used := make([]bool, k)
		s := 0.0
		for j, l := range labels {
			used[l] = true
			s += cost[j*cols+l]
		}
		for l, u := range used {
			if !u {
				t.Fatalf("trial %d: label %d on no instance: %v", trial, l, labels)
			}
		}
		if math.Abs(s-total) > 1e-12 || math.Abs(total-best) > 1e-9 {
			t.Fatalf("trial %d (n=%d k=%d): total %v (labels sum to %v), enumeration %v", trial, n, k, total, s, best)
		}
	}
	if _, _, err := Cover(make([]float64, 4), 2, 3, 3); err == nil {
		t.Error("3 labels on 2 instances accepted")
	}
}

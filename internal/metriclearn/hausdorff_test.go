package metriclearn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMaxHausdorffFromMatchesBelow: whichever instance is taken first, the
// maximal Hausdorff distance with a witness order is maxHausdorffBelow's
// value (==) when below the bound, at least the bound otherwise, and a
// reported witness is an instance of a whose nearest instance of b is at
// least the bound away. Checked on continuous and small-integer (tied) data,
// with unbounded, tight and loose bounds and out-of-range first instances.
func TestMaxHausdorffFromMatchesBelow(t *testing.T) {
	for _, tc := range []struct {
		dim, maxInst, grid int
	}{
		{5, 9, 0}, {23, 3, 0}, {3, 4, 3}, {2, 6, 2}, {1, 1, 0},
	} {
		t.Run(fmt.Sprintf("dim=%d/inst=%d/grid=%d", tc.dim, tc.maxInst, tc.grid), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.dim), uint64(tc.grid)))
			bags := randomBags(rng, 40, tc.dim, tc.maxInst, tc.grid, true)
			for i, a := range bags {
				for j, b := range bags {
					exact := maxHausdorffBelow(a, b, math.Inf(1))
					for _, bound := range []float64{math.Inf(1), exact, math.Nextafter(exact, math.Inf(1)), exact / 2, 2 * exact, 0} {
						want := maxHausdorffBelow(a, b, bound)
						for first := -1; first <= len(a); first++ {
							got, w := maxHausdorffFrom(a, b, bound, first)
							switch {
							case want < bound && got != want:
								t.Fatalf("bags %d, %d, bound %v, first %d: %v, want %v", i, j, bound, first, got, want)
							case want >= bound && got < bound:
								t.Fatalf("bags %d, %d, bound %v, first %d: %v below the bound, want >= it (%v)", i, j, bound, first, got, want)
							case w >= len(a):
								t.Fatalf("bags %d, %d: witness %d of %d instances", i, j, w, len(a))
							case w >= 0 && minHausdorffBelow(a[w:w+1], b, math.Inf(1)) < bound:
								t.Fatalf("bags %d, %d, bound %v: witness %d is nearer than the bound", i, j, bound, w)
							}
						}
					}
				}
			}
		})
	}
}

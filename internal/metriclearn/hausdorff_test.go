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

// maxHausdorffBelow, the reference maxHausdorffFrom is held to, is the
// maximal Hausdorff distance (squared)
// max(h(a,b), h(b,a)), h(a,b) = max over x in a of min over y in b of
// ‖x − y‖², when below bound, and some value >= bound otherwise.
//
// The inner minimum takes full distances, not distances abandoned at the
// running minimum: a distance is abandoned only once its partial sum
// reaches the minimum, and the full sum is no smaller (squares are
// non-negative and rounding is monotone), so the minimum is the same value
// either way, and over the few coordinates of a learned projection the
// branch per coordinate cost more than the coordinates it saved.
func maxHausdorffBelow(a, b [][]float64, bound float64) float64 {
	h := 0.0
	for _, pair := range [2][2][][]float64{{a, b}, {b, a}} {
		for _, x := range pair[0] {
			m := math.Inf(1)
			for _, y := range pair[1] {
				// Below h this x cannot raise the maximum: stop early.
				if m = min(m, sqDist(x, y)); m <= h {
					break
				}
			}
			if h = max(h, m); h >= bound {
				return h
			}
		}
	}
	return h
}

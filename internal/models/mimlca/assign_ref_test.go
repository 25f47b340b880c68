package mimlca

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/solver/assign"
	"gonum.org/v1/gonum/mat"
)

// assignRangeReference is assignRange as it was before the copies of a
// label shared one distance: every column's distance computed anew. It is
// the reference TestAssignRangeMatchesReference checks against.
func assignRangeReference(u, z *mat.Dense, bags []Bag, h []int, bagCost []float64, capacity int) (bool, error) {
	changed := false
	for i, b := range bags {
		bagCost[i] = 0
		if b.N == 0 || len(b.Labels) == 0 {
			continue
		}
		cols := len(b.Labels) * min(capacity, b.N)
		var cost []float64
		for j := 0; j < b.N; j++ {
			row := u.RawRowView(b.Start + j)
			for t := 0; t < cols; t++ {
				cost = append(cost, sqDist(row, z.RawRowView(b.Labels[t%len(b.Labels)])))
			}
		}
		rowToCol, total, err := assign.Solve(cost, b.N, cols)
		if err != nil {
			return changed, err
		}
		bagCost[i] = total
		for j, col := range rowToCol {
			c := -1
			if col >= 0 {
				c = b.Labels[col%len(b.Labels)]
			}
			if h[b.Start+j] != c {
				h[b.Start+j] = c
				changed = true
			}
		}
	}
	return changed, nil
}

// TestAssignRangeMatchesReference: the assignment step gives the same
// assignment, bag costs and change flag as the reference, for capacities 1
// to 9, on continuous data and on small-integer data where distances tie.
func TestAssignRangeMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		capacity, grid int
	}{
		{1, 0}, {2, 0}, {9, 0}, {1, 3}, {3, 2}, {9, 2}, {20, 0}, {20, 2},
	} {
		t.Run(fmt.Sprintf("capacity=%d/grid=%d", tc.capacity, tc.grid), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.capacity), uint64(tc.grid)))
			const k, dim = 5, 4
			var bags []Bag
			n := 0
			for range 60 {
				b := Bag{Start: n, N: rng.IntN(10)}
				for c := range k {
					if rng.IntN(3) == 0 {
						b.Labels = append(b.Labels, c)
					}
				}
				bags = append(bags, b)
				n += b.N
			}
			draw := func(r, c int) *mat.Dense {
				m := mat.NewDense(max(r, 1), c, nil)
				for i := range r {
					for j := range c {
						if tc.grid > 0 {
							m.Set(i, j, float64(rng.IntN(tc.grid)))
						} else {
							m.Set(i, j, rng.NormFloat64())
						}
					}
				}
				return m
			}
			u, z := draw(n, dim), draw(k, dim)
			h0 := make([]int, n)
			for j := range h0 {
				h0[j] = rng.IntN(k+1) - 1
			}
			gh, wh := slices.Clone(h0), slices.Clone(h0)
			gc, wc := make([]float64, len(bags)), make([]float64, len(bags))
			gch, err := assignRange(u, z, bags, gh, gc, tc.capacity, false)
			if err != nil {
				t.Fatal(err)
			}
			wch, err := assignRangeReference(u, z, bags, wh, wc, tc.capacity)
			if err != nil {
				t.Fatal(err)
			}
			if gch != wch || !slices.Equal(gh, wh) || !slices.Equal(gc, wc) {
				t.Fatalf("changed %v, h %v, costs %v; reference %v, %v, %v", gch, gh, gc, wch, wh, wc)
			}
		})
	}
}

// TestNearestLabelsMatchesHungarian: when every label may take every
// instance, nearestLabels returns the Hungarian algorithm's assignment and
// total (==), and declines (ok false) when an instance is within the tie
// margin of two labels: exact ties (small-integer costs), near ties a few
// ulps apart, and a non-finite cost. Continuous costs must take the fast
// path, or the test would only exercise the fallback.
func TestNearestLabelsMatchesHungarian(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, nl    int
		draw     func(rng *rand.Rand) float64
		wantFast bool
	}{
		{"continuous", 9, 3, func(rng *rand.Rand) float64 { return 10 * rng.Float64() }, true},
		{"continuous, one label", 4, 1, func(rng *rand.Rand) float64 { return rng.Float64() }, true},
		{"exact ties", 9, 4, func(rng *rand.Rand) float64 { return float64(rng.IntN(2)) }, false},
		{"near ties", 9, 2, func(rng *rand.Rand) float64 { return 1 + float64(rng.IntN(3))*1e-15 }, false},
		{"not finite", 3, 2, func(rng *rand.Rand) float64 { return math.Inf(1) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(tc.n*tc.nl)))
			for range 100 {
				b := Bag{Start: 2, N: tc.n}
				for c := range tc.nl {
					b.Labels = append(b.Labels, 3*c+1)
				}
				cols := tc.nl * tc.n
				cost := make([]float64, 0, tc.n*cols)
				for range tc.n {
					row := make([]float64, tc.nl)
					for c := range row {
						row[c] = tc.draw(rng)
					}
					for t := range cols {
						cost = append(cost, row[t%tc.nl])
					}
				}
				h := make([]int, b.Start+b.N)
				for j := range h {
					h[j] = -1
				}
				total, changed, ok := nearestLabels(cost, b, cols, h)
				if ok != tc.wantFast {
					t.Fatalf("cost %v: ok=%v, want %v", cost, ok, tc.wantFast)
				}
				if !ok {
					if slices.ContainsFunc(h, func(c int) bool { return c >= 0 }) {
						t.Fatalf("declined but changed h: %v", h)
					}
					continue
				}
				rowToCol, want, err := assign.Solve(cost, b.N, cols)
				if err != nil {
					t.Fatal(err)
				}
				if total != want || !changed {
					t.Fatalf("total %v changed %v, Hungarian %v", total, changed, want)
				}
				for j, col := range rowToCol {
					if h[b.Start+j] != b.Labels[col%tc.nl] {
						t.Fatalf("instance %d: label %d, Hungarian %d", j, h[b.Start+j], b.Labels[col%tc.nl])
					}
				}
			}
		})
	}
}

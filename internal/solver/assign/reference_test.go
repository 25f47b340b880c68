package assign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// hungarianAt is hungarian as it was before it read a contiguous matrix: the
// cost of a cell through an accessor, the transpose left implicit. It is the
// reference TestSolveMatchesAccessorForm checks the tie-breaking against.
func hungarianAt(n, m int, at func(i, j int) float64) []int {
	u := make([]float64, n+1)
	v := make([]float64, m+1)
	p := make([]int, m+1)
	way := make([]int, m+1)
	minv := make([]float64, m+1)
	used := make([]bool, m+1)
	for i := 1; i <= n; i++ {
		p[0] = i
		j0 := 0
		for j := range minv {
			minv[j] = math.Inf(1)
			used[j] = false
		}
		for {
			used[j0] = true
			i0 := p[j0]
			delta := math.Inf(1)
			j1 := -1
			for j := 1; j <= m; j++ {
				if used[j] {
					continue
				}
				cur := at(i0-1, j-1) - u[i0] - v[j]
				if cur < minv[j] {
					minv[j] = cur
					way[j] = j0
				}
				if minv[j] < delta {
					delta = minv[j]
					j1 = j
				}
			}
			for j := 0; j <= m; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		for j0 != 0 {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
		}
	}
	out := make([]int, n)
	for j := 1; j <= m; j++ {
		if p[j] != 0 {
			out[p[j]-1] = j - 1
		}
	}
	return out
}

// solveAt is Solve on hungarianAt.
func solveAt(cost []float64, rows, cols int) []int {
	rowToCol := make([]int, rows)
	for i := range rowToCol {
		rowToCol[i] = -1
	}
	if rows == 0 || cols == 0 {
		return rowToCol
	}
	if rows > cols {
		for i, j := range hungarianAt(cols, rows, func(i, j int) float64 { return cost[j*cols+i] }) {
			rowToCol[j] = i
		}
		return rowToCol
	}
	for i, j := range hungarianAt(rows, cols, func(i, j int) float64 { return cost[i*cols+j] }) {
		rowToCol[i] = j
	}
	return rowToCol
}

// TestSolveMatchesAccessorForm: Solve picks the same assignment as the
// accessor form it replaced, on square and rectangular matrices (both
// orientations) with many exact ties (small integer costs, and the column
// copies of MIMLCA's capacity > 1), where another visiting order would
// return another optimum. MIMLCA's k-means, and so every model, depends on
// which optimum is returned.
func TestSolveMatchesAccessorForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		rows, cols, levels, copies int
	}{
		{9, 9, 3, 1}, {9, 27, 4, 9}, {27, 9, 4, 1}, {3, 18, 2, 9}, {5, 1, 2, 1}, {1, 5, 0, 1}, {15, 15, 0, 1}, {7, 12, 3, 3},
	} {
		t.Run(fmt.Sprintf("%dx%d/levels=%d/copies=%d", tc.rows, tc.cols, tc.levels, tc.copies), func(t *testing.T) {
			for range 50 {
				cost := make([]float64, tc.rows*tc.cols)
				base := tc.cols / tc.copies
				for i := range tc.rows {
					for j := range base {
						v := rng.Float64()
						if tc.levels > 0 {
							v = float64(rng.IntN(tc.levels))
						}
						for c := j; c < tc.cols; c += base {
							cost[i*tc.cols+c] = v
						}
					}
				}
				got, _, err := Solve(cost, tc.rows, tc.cols)
				if err != nil {
					t.Fatal(err)
				}
				if want := solveAt(cost, tc.rows, tc.cols); !slices.Equal(got, want) {
					t.Fatalf("cost %v: assignment %v, accessor form %v", cost, got, want)
				}
			}
		})
	}
}

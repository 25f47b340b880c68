package assign

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteForce enumerates every injective map from the smaller side into the
// larger one and returns the least total cost.
func bruteForce(cost []float64, rows, cols int) float64 {
	best := math.Inf(1)
	usedCol := make([]bool, cols)
	usedRow := make([]bool, rows)
	var rec func(k int, acc float64)
	if rows <= cols {
		rec = func(i int, acc float64) {
			if i == rows {
				best = min(best, acc)
				return
			}
			for j := 0; j < cols; j++ {
				if !usedCol[j] {
					usedCol[j] = true
					rec(i+1, acc+cost[i*cols+j])
					usedCol[j] = false
				}
			}
		}
	} else {
		rec = func(j int, acc float64) {
			if j == cols {
				best = min(best, acc)
				return
			}
			for i := 0; i < rows; i++ {
				if !usedRow[i] {
					usedRow[i] = true
					rec(j+1, acc+cost[i*cols+j])
					usedRow[i] = false
				}
			}
		}
	}
	rec(0, 0)
	if rows == 0 || cols == 0 {
		return 0
	}
	return best
}

func checkValid(t *testing.T, rowToCol []int, rows, cols int) {
	t.Helper()
	seen := make(map[int]bool)
	assigned := 0
	for i, j := range rowToCol {
		if j == -1 {
			continue
		}
		if j < 0 || j >= cols {
			t.Fatalf("row %d assigned to column %d out of range", i, j)
		}
		if seen[j] {
			t.Fatalf("column %d assigned twice", j)
		}
		seen[j] = true
		assigned++
	}
	if assigned != min(rows, cols) {
		t.Fatalf("%d pairs assigned, want %d", assigned, min(rows, cols))
	}
}

func TestSolveAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name       string
		rows, cols int
		gen        func() float64
	}{
		{"square-uniform", 5, 5, rng.Float64},
		{"wide", 3, 7, rng.Float64},
		{"tall", 7, 3, rng.Float64},
		{"single-row", 1, 6, rng.Float64},
		{"single-col", 6, 1, rng.Float64},
		{"negative-costs", 6, 4, func() float64 { return rng.NormFloat64() * 10 }},
		{"integer-ties", 6, 6, func() float64 { return float64(rng.IntN(3)) }},
		{"empty", 0, 4, rng.Float64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for trial := 0; trial < 200; trial++ {
				cost := make([]float64, tc.rows*tc.cols)
				for i := range cost {
					cost[i] = tc.gen()
				}
				got, total, err := Solve(cost, tc.rows, tc.cols)
				if err != nil {
					t.Fatal(err)
				}
				checkValid(t, got, tc.rows, tc.cols)
				sum := 0.0
				for i, j := range got {
					if j >= 0 {
						sum += cost[i*tc.cols+j]
					}
				}
				if math.Abs(sum-total) > 1e-9 {
					t.Fatalf("reported total %v, assignment sums to %v", total, sum)
				}
				if want := bruteForce(cost, tc.rows, tc.cols); math.Abs(total-want) > 1e-9 {
					t.Fatalf("trial %d: total %v, brute force optimum %v", trial, total, want)
				}
			}
		})
	}
}

func TestSolveRejectsBadInput(t *testing.T) {
	cases := []struct {
		name       string
		cost       []float64
		rows, cols int
	}{
		{"short", []float64{1, 2, 3}, 2, 2},
		{"nan", []float64{1, math.NaN(), 3, 4}, 2, 2},
		{"inf", []float64{1, 2, math.Inf(1), 4}, 2, 2},
	}
	for _, tc := range cases {
		if _, _, err := Solve(tc.cost, tc.rows, tc.cols); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func BenchmarkSolve15x15(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	cost := make([]float64, 15*15)
	for i := range cost {
		cost[i] = rng.Float64()
	}
	for b.Loop() {
		if _, _, err := Solve(cost, 15, 15); err != nil {
			b.Fatal(err)
		}
	}
}

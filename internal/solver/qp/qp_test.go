package qp

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// projectCapped is the closed-form solution for H = I: the Euclidean
// projection of c onto {α ≥ 0, 1ᵀα ≤ C}, α = max(c − θ, 0) with θ ≥ 0 the
// smallest value meeting the sum bound (found by bisection, independently of
// the solver).
func projectCapped(c []float64, bound float64) []float64 {
	sumAt := func(theta float64) float64 {
		s := 0.0
		for _, v := range c {
			s += math.Max(0, v-theta)
		}
		return s
	}
	theta := 0.0
	if sumAt(0) > bound {
		lo, hi := 0.0, 0.0
		for _, v := range c {
			hi = math.Max(hi, v)
		}
		for range 200 {
			mid := (lo + hi) / 2
			if sumAt(mid) > bound {
				lo = mid
			} else {
				hi = mid
			}
		}
		theta = hi
	}
	out := make([]float64, len(c))
	for i, v := range c {
		out[i] = math.Max(0, v-theta)
	}
	return out
}

func TestIdentityClosedForm(t *testing.T) {
	tests := []struct {
		name  string
		c     []float64
		bound float64
	}{
		{"interior", []float64{0.5, 0.2, -1}, 10},
		{"sum active", []float64{3, 2, 1, -1}, 2},
		{"all negative", []float64{-1, -2}, 5},
		{"single", []float64{7}, 3},
		{"ties", []float64{1, 1, 1}, 1.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := len(tc.c)
			h := make([]float64, n*n)
			for i := range n {
				h[i*n+i] = 1
			}
			res, err := Solver{}.Solve(tc.c, h, tc.bound, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := projectCapped(tc.c, tc.bound)
			for i := range want {
				if math.Abs(res.Alpha[i]-want[i]) > 1e-9 {
					t.Fatalf("alpha = %v, want %v", res.Alpha, want)
				}
			}
			if res.Gap > 1e-9 {
				t.Errorf("KKT gap %g", res.Gap)
			}
		})
	}
}

// bruteForce enumerates every support set S and both states of the sum
// constraint, solves the KKT equalities, and keeps the best feasible point
// satisfying all KKT conditions. Exponential, so only for tiny T with H
// positive definite (unique optimum).
func bruteForce(c, h []float64, bound float64) []float64 {
	t := len(c)
	best := make([]float64, t)
	bestObj := 0.0
	objective := func(a []float64) float64 {
		o := 0.0
		for i := range t {
			o += a[i] * c[i]
			for j := range t {
				o -= 0.5 * a[i] * h[i*t+j] * a[j]
			}
		}
		return o
	}
	for mask := 1; mask < 1<<t; mask++ {
		var sup []int
		for i := range t {
			if mask&(1<<i) != 0 {
				sup = append(sup, i)
			}
		}
		for _, tight := range []bool{false, true} {
			k := len(sup)
			m := k
			if tight {
				m++
			}
			A := mat.NewDense(m, m, nil)
			b := mat.NewVecDense(m, nil)
			for r, i := range sup {
				for q, j := range sup {
					A.Set(r, q, h[i*t+j])
				}
				b.SetVec(r, c[i])
				if tight {
					A.Set(r, k, 1)
					A.Set(k, r, 1)
				}
			}
			if tight {
				b.SetVec(k, bound)
			}
			var x mat.VecDense
			if err := x.SolveVec(A, b); err != nil {
				continue
			}
			a := make([]float64, t)
			s, ok := 0.0, true
			for r, i := range sup {
				a[i] = x.AtVec(r)
				s += a[i]
				if a[i] < -1e-12 {
					ok = false
				}
			}
			if !ok || s > bound*(1+1e-9) {
				continue
			}
			if o := objective(a); o > bestObj {
				bestObj, best = o, a
			}
		}
	}
	return best
}

func randomPD(r *rand.Rand, t, rank int, ridge float64) []float64 {
	g := make([]float64, t*rank)
	for i := range g {
		g[i] = r.NormFloat64()
	}
	h := make([]float64, t*t)
	for i := range t {
		for j := range t {
			for k := range rank {
				h[i*t+j] += g[i*rank+k] * g[j*rank+k]
			}
		}
		h[i*t+i] += ridge
	}
	return h
}

func TestAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + trial%6
		h := randomPD(r, n, n+2, 0.1)
		c := make([]float64, n)
		for i := range c {
			c[i] = 3 * r.NormFloat64()
		}
		bound := []float64{0.1, 1, 10, 1e4}[trial%4]
		res, err := Solver{}.Solve(c, h, bound, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteForce(c, h, bound)
		for i := range want {
			if math.Abs(res.Alpha[i]-want[i]) > 1e-7*math.Max(1, math.Abs(want[i])) {
				t.Fatalf("trial %d (T=%d C=%g): alpha = %v, want %v", trial, n, bound, res.Alpha, want)
			}
		}
	}
}

// TestSingularKKT uses a rank-deficient H, as Gram matrices of many cutting
// planes in low dimension are: the optimum is not unique, so the solver is
// checked through the KKT conditions, at rounding level.
func TestSingularKKT(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		n := 5 + trial%40
		h := randomPD(r, n, 3, 0)
		c := make([]float64, n)
		for i := range c {
			c[i] = r.NormFloat64()
		}
		res, err := Solver{}.Solve(c, h, 1e4, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Gap > 1e-9 {
			t.Fatalf("trial %d: KKT gap %g after %d iterations", trial, res.Gap, res.Iterations)
		}
		sum := 0.0
		for _, v := range res.Alpha {
			if v < 0 {
				t.Fatalf("negative alpha %v", v)
			}
			sum += v
		}
		if sum > 1e4*(1+1e-12) {
			t.Fatalf("sum %v over bound", sum)
		}
	}
}

func TestWarmStartSameOptimum(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	h := randomPD(r, 6, 8, 0.5)
	c := []float64{1, -2, 3, 0.5, 2, -1}
	cold, err := Solver{}.Solve(c, h, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	warm, err := Solver{}.Solve(c, h, 2, []float64{5, 5, 5, 5, 5, 5})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(cold.Objective-warm.Objective) > 1e-10 {
		t.Fatalf("objective cold %v warm %v", cold.Objective, warm.Objective)
	}
}

func TestInvalid(t *testing.T) {
	tests := []struct {
		name  string
		c, h  []float64
		bound float64
	}{
		{"H size", []float64{1, 2}, []float64{1}, 1},
		{"zero bound", []float64{1}, []float64{1}, 0},
		{"NaN c", []float64{math.NaN()}, []float64{1}, 1},
		{"Inf H", []float64{1}, []float64{math.Inf(1)}, 1},
	}
	for _, tc := range tests {
		if _, err := (Solver{}).Solve(tc.c, tc.h, tc.bound, nil); !errors.Is(err, ErrInput) {
			t.Errorf("%s: err = %v, want ErrInput", tc.name, err)
		}
	}
}

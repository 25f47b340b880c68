package svm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// kktViolation is the maximal violation max_{I_up} −y∇ − min_{I_low} −y∇
// of the dual optimality conditions at alpha, with the gradient computed
// afresh from alpha (not the solver's running one).
func kktViolation(g *Gram, y []bool, bound, alpha []float64) float64 {
	n := len(alpha)
	m, M := math.Inf(-1), math.Inf(1)
	for t := range n {
		grad := -1.0
		row := g.row(t)
		for s, a := range alpha {
			grad += sign(y[t]) * sign(y[s]) * row[s] * a
		}
		v := -sign(y[t]) * grad
		up := (y[t] && alpha[t] < bound[t]) || (!y[t] && alpha[t] > 0)
		low := (y[t] && alpha[t] > 0) || (!y[t] && alpha[t] < bound[t])
		if up {
			m = max(m, v)
		}
		if low {
			M = min(M, v)
		}
	}
	return m - M
}

// TestShrinkingMatchesUnshrunk: SMO with shrinking reaches the unshrunk
// solver's optimum on random problems (RBF kernels of three widths,
// class-balanced and random boxes, warm starts, duplicated examples): at
// a tight tolerance the dual objectives agree to 1e-9 relative and the
// decision values on held-out points have the same sign wherever either
// is beyond 1e-4; at any tolerance the KKT conditions hold to it on every
// variable, with the gradient recomputed from the alphas. Some solves must
// shrink variables, and some must find a violator among the shrunk ones
// when the active ones converge (else the final unshrinking is untested):
// it catches a skipped final unshrinking, a shrinking rule that drops
// variables which can still violate, and a j pass that reads the wrong
// active set.
func TestShrinkingMatchesUnshrunk(t *testing.T) {
	ctx := context.Background()
	var shrunk, fewer, total int
	for _, tc := range []struct {
		name       string
		n          int
		gamma      float64
		duplicates bool
	}{
		{"rbf", 120, 0.5, false},
		{"wide rbf", 150, 0.1, false},
		{"narrow rbf", 100, 3, false},
		{"duplicates", 120, 0.5, true},
	} {
		for seed := uint64(1); seed <= 30; seed++ {
			name := fmt.Sprintf("%s/seed=%d", tc.name, seed)
			X, y := randProblem(seed+900, tc.n+40, 4, 0.9)
			Xte := X[tc.n:]
			X, y = X[:tc.n], y[:tc.n]
			if tc.duplicates {
				duplicateHalf(X, y)
			}
			g := RBFGram(X, tc.gamma)
			r := rand.New(rand.NewPCG(seed, 13))
			scale := math.Pow(10, -1+4*r.Float64())
			bound := make([]float64, tc.n)
			np := positives(y)
			for i := range bound {
				if seed%2 == 0 {
					bound[i] = scale / float64(2*np)
					if !y[i] {
						bound[i] = scale / float64(2*(tc.n-np))
					}
				} else {
					bound[i] = scale * (0.2 + r.Float64())
				}
			}
			var alpha0 []float64
			if seed%3 == 0 {
				half := make([]float64, tc.n)
				for i := range half {
					half[i] = bound[i] / 3
				}
				s, err := SolveBounded(ctx, g, y, half, Params{})
				if err != nil {
					t.Fatal(err)
				}
				alpha0 = s.Alpha
			}
			for _, tol := range []float64{1e-3, 1e-10} {
				plain, err := SolveBoundedFrom(ctx, g, y, bound, alpha0, Params{Tol: tol})
				if err != nil {
					t.Fatal(err)
				}
				sh, err := SolveBoundedFrom(ctx, g, y, bound, alpha0, Params{Tol: tol, Shrinking: true, onShrink: func(active int, atConvergence bool) {
					if active < tc.n {
						shrunk++
					}
					if atConvergence {
						fewer++
					}
				}})
				if err != nil {
					t.Fatal(err)
				}
				total++
				if !sh.Converged {
					t.Errorf("%s tol %g: shrinking did not converge", name, tol)
				}
				// Rounding of the fresh gradient: a few ulps of its
				// terms.
				if v := kktViolation(g, y, bound, sh.Alpha); v >= tol+1e-9*scale {
					t.Errorf("%s tol %g: KKT violation %v with shrinking (unshrunk: %v)", name, tol, v, kktViolation(g, y, bound, plain.Alpha))
				}
				if tol > 1e-6 {
					continue
				}
				a, b := plain.Objective(g, y), sh.Objective(g, y)
				if math.Abs(a-b) > 1e-9*max(1, math.Abs(a)) {
					t.Errorf("%s: dual objective %v with shrinking, %v without", name, b, a)
				}
				ma, mb := plain.model(X, y, tc.gamma), sh.model(X, y, tc.gamma)
				for u, x := range Xte {
					fa, fb := ma.Decision(x), mb.Decision(x)
					if (fa > 0) != (fb > 0) && max(math.Abs(fa), math.Abs(fb)) > 1e-4 {
						t.Errorf("%s: held-out point %d: decision %v with shrinking, %v without", name, u, fb, fa)
					}
				}
			}
		}
	}
	t.Logf("%d solves: %d shrinkings left variables out; the active variables converged with a shrunk violator %d times", total, shrunk, fewer)
	if shrunk < total || fewer < 3 {
		t.Errorf("too little shrinking to test: %d shrinkings, %d unshrinkings at convergence", shrunk, fewer)
	}
}

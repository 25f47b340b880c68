package svm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBoundFreeSolutionIsReused: when a solve reports BoundFree, the same
// solve with bounds no smaller (scaled per example by factors in [1, 11],
// or equal) returns the same alphas, bias, iteration count and flags, bit
// for bit, from 0 and from a warm start, with and without shrinking, on
// random problems with random or class-balanced boxes, an indefinite
// matrix and duplicated examples.
// Solves that are not bound-free must include some whose solution moves
// with larger bounds (the flag is not trivially set), and some whose
// final alphas are all below their bounds though one was at its bound
// during the run: a flag computed from the final alphas alone would
// reuse those wrongly.
func TestBoundFreeSolutionIsReused(t *testing.T) {
	ctx := context.Background()
	free, moved, transient := 0, 0, 0
	for _, tc := range []struct {
		name       string
		n          int
		gamma      float64
		indefinite bool
		duplicates bool
	}{
		{"rbf", 40, 0.5, false, false},
		{"wide rbf", 60, 0.05, false, false},
		{"narrow rbf", 50, 3, false, false},
		{"indefinite", 30, 0.5, true, false},
		{"duplicates", 40, 0.5, false, true},
	} {
		for seed := uint64(1); seed <= 40; seed++ {
			X, y := randProblem(seed+500, tc.n, 3, 0.8)
			if tc.duplicates {
				duplicateHalf(X, y)
			}
			g := RBFGram(X, tc.gamma)
			if tc.indefinite {
				makeIndefinite(g)
			}
			r := rand.New(rand.NewPCG(seed, 9))
			// Box sizes from 10⁻² to 10³: small ones bind, large ones
			// (mostly) do not.
			scale := math.Pow(10, -2+5*r.Float64())
			bound := make([]float64, tc.n)
			np := positives(y)
			for i := range bound {
				switch seed % 3 {
				case 0:
					bound[i] = scale / float64(2*np)
					if !y[i] {
						bound[i] = scale / float64(2*(tc.n-np))
					}
				case 1:
					bound[i] = scale * (0.5 + r.Float64())
				default:
					bound[i] = scale
				}
			}
			p := Params{Tol: []float64{1e-3, 1e-6}[seed%2], Shrinking: seed%3 == 2}
			if seed%4 == 1 && !tc.indefinite && tc.gamma > 0.1 {
				// Bounds just above the largest alpha of the optimum
				// without binding bounds: the optimum does not touch
				// them, but a step on the way may. (Not for the wide
				// kernel, whose hard-margin solve takes millions of
				// iterations.)
				hard := make([]float64, tc.n)
				for i := range hard {
					hard[i] = 1e6
				}
				s, err := SolveBounded(ctx, g, y, hard, p)
				if err != nil {
					t.Fatal(err)
				}
				top := slices.Max(s.Alpha) * (1.001 + 0.05*r.Float64())
				for i := range bound {
					bound[i] = top
				}
			}
			var alpha0 []float64
			if seed%4 == 3 {
				// A warm start: the optimum at half the bounds.
				half := make([]float64, tc.n)
				for i := range half {
					half[i] = bound[i] / 2
				}
				s, err := SolveBounded(ctx, g, y, half, p)
				if err != nil {
					t.Fatal(err)
				}
				alpha0 = s.Alpha
			}
			larger := make([]float64, tc.n)
			for i := range larger {
				larger[i] = bound[i] * (1 + 10*r.Float64())
				if seed%5 == 0 {
					larger[i] = bound[i]
				}
			}
			name := fmt.Sprintf("%s/seed=%d", tc.name, seed)
			a, err := SolveBoundedFrom(ctx, g, y, bound, alpha0, p)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			b, err := SolveBoundedFrom(ctx, g, y, larger, alpha0, p)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			same := slices.Equal(a.Alpha, b.Alpha) && a.Bias == b.Bias && a.Iter == b.Iter && a.Converged == b.Converged
			if !a.BoundFree {
				if !same {
					moved++
				}
				below := true
				for i, v := range a.Alpha {
					below = below && v < bound[i]
				}
				if below {
					transient++
				}
				continue
			}
			free++
			if !same || !b.BoundFree {
				t.Errorf("%s: bound-free solve (iter %d, bias %v) differs with larger bounds (iter %d, bias %v, bound-free %v)", name, a.Iter, a.Bias, b.Iter, b.Bias, b.BoundFree)
			}
		}
	}
	t.Logf("%d bound-free solves reused exactly; %d not bound-free, %d of them moved by larger bounds, %d at a bound only during the run", free, 200-free, moved, transient)
	if free < 20 || moved < 20 || transient < 1 {
		t.Errorf("too few cases of each kind: %d bound-free, %d moved, %d transient", free, moved, transient)
	}
}

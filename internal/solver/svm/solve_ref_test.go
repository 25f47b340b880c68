package svm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSolveBoundedMatchesReference: SolveBounded (the gradient update and
// the next iteration's choice of i in one pass, the diagonal cached) gives
// bit for bit the solution of solveBoundedRef, the three-pass solver it
// replaced (kept below verbatim): the same alphas, bias, iteration count
// and convergence flag on random problems with per-example boxes, first-
// and second-order selection, an iteration cap, a polynomial-like
// indefinite matrix (quad ≤ 0 steps) and duplicated examples (ties in the
// selection). The models trained through it (misvm's kernels, the RBF
// one-vs-rest) are therefore unchanged; it catches a reordered comparison
// or tie rule in the fused pass.
func TestSolveBoundedMatchesReference(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		n, d       int
		gamma      float64
		boxes      string // "balanced", "random" or "same"
		tol        float64
		maxIter    int
		firstOrder bool
		indefinite bool
		duplicates bool
	}{
		{"balanced boxes", 60, 3, 0.5, "balanced", 1e-3, 0, false, false, false},
		{"random boxes, tight tolerance", 40, 2, 1, "random", 1e-8, 0, false, false, false},
		{"large C", 50, 4, 0.2, "same", 1e-3, 0, false, false, false},
		{"first order", 50, 3, 0.5, "random", 1e-4, 0, true, false, false},
		{"iteration cap", 80, 3, 0.5, "same", 1e-6, 25, false, false, false},
		{"indefinite matrix", 30, 2, 0.5, "random", 1e-3, 0, false, true, false},
		{"duplicated examples", 40, 2, 0.5, "balanced", 1e-5, 0, false, false, true},
	}
	for _, tc := range tests {
		for seed := uint64(1); seed <= 5; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				X, y := randProblem(seed+100, tc.n, tc.d, 0.7)
				if tc.duplicates {
					duplicateHalf(X, y)
				}
				g := RBFGram(X, tc.gamma)
				if tc.indefinite {
					makeIndefinite(g)
				}
				r := rand.New(rand.NewPCG(seed, 7))
				bound := make([]float64, tc.n)
				np := positives(y)
				for i := range bound {
					switch tc.boxes {
					case "balanced":
						bound[i] = 100 / float64(2*np)
						if !y[i] {
							bound[i] = 100 / float64(2*(tc.n-np))
						}
					case "random":
						bound[i] = 0.05 + 10*r.Float64()
					default:
						bound[i] = 1e4
					}
				}
				p := Params{Tol: tc.tol, MaxIter: tc.maxIter, firstOrder: tc.firstOrder}
				want, err := solveBoundedRef(ctx, g, y, bound, p)
				if err != nil {
					t.Fatal(err)
				}
				got, err := SolveBounded(ctx, g, y, bound, p)
				if err != nil {
					t.Fatal(err)
				}
				if got.Iter != want.Iter || got.Converged != want.Converged || got.Bias != want.Bias {
					t.Fatalf("iter %d converged %v bias %v, reference %d %v %v", got.Iter, got.Converged, got.Bias, want.Iter, want.Converged, want.Bias)
				}
				for i := range want.Alpha {
					if got.Alpha[i] != want.Alpha[i] {
						t.Fatalf("alpha[%d] = %v, reference %v", i, got.Alpha[i], want.Alpha[i])
					}
				}
				if want.Iter < 5 {
					t.Errorf("reference stopped after %d iterations: the case does not exercise the loop", want.Iter)
				}
			})
		}
	}
}

// solveBoundedRef is SolveBounded as it was before the gradient update and
// the choice of i shared a pass: the reference of
// TestSolveBoundedMatchesReference.
func solveBoundedRef(ctx context.Context, g *Gram, y []bool, bound []float64, p Params) (Solution, error) {
	n := g.n
	if len(y) != n || len(bound) != n {
		return Solution{}, fmt.Errorf("%w: %d labels and %d bounds for a %d×%d gram", ErrBadInput, len(y), len(bound), n, n)
	}
	if _, ok := constantModel(y); ok || n < 2 {
		return Solution{}, fmt.Errorf("%w: both classes are needed", ErrBadInput)
	}
	for i, c := range bound {
		if !(c > 0) || math.IsInf(c, 0) {
			return Solution{}, fmt.Errorf("%w: bound[%d]=%v must be positive and finite", ErrBadInput, i, c)
		}
	}
	eps := p.tol()
	maxIter := p.MaxIter
	if maxIter == 0 {
		maxIter = max(10_000_000, 100*n)
	}
	ys := make([]float64, n)
	for i, v := range y {
		ys[i] = sign(v)
	}
	alpha := make([]float64, n)
	// grad = Qa − e, with a = 0 at the start.
	grad := make([]float64, n)
	for i := range grad {
		grad[i] = -1
	}
	upper := func(t int) bool { return alpha[t] >= bound[t] }
	lower := func(t int) bool { return alpha[t] <= 0 }

	sol := Solution{Alpha: alpha}
	for iter := 0; ; iter++ {
		if iter%1000 == 0 {
			if err := ctx.Err(); err != nil {
				return Solution{}, fmt.Errorf("svm solve: %w", err)
			}
		}
		if iter >= maxIter {
			sol.Iter = iter
			break
		}
		// Working set selection 2 (Fan, Chen, Lin 2005): i maximises
		// −y_t ∇_t over I_up; j minimises the second-order decrease
		// −b²/a among the indices violating the pair condition with i.
		gmax, iSel := math.Inf(-1), -1
		for t := 0; t < n; t++ {
			if ys[t] > 0 {
				if !upper(t) && -grad[t] >= gmax {
					gmax, iSel = -grad[t], t
				}
			} else if !lower(t) && grad[t] >= gmax {
				gmax, iSel = grad[t], t
			}
		}
		gmax2, jSel, objMin := math.Inf(-1), -1, math.Inf(1)
		if iSel >= 0 {
			ki := g.row(iSel)
			kii := ki[iSel]
			for t := 0; t < n; t++ {
				var gd float64
				if ys[t] > 0 {
					if lower(t) {
						continue
					}
					gmax2 = max(gmax2, grad[t])
					gd = gmax + grad[t]
				} else {
					if upper(t) {
						continue
					}
					gmax2 = max(gmax2, -grad[t])
					gd = gmax - grad[t]
				}
				if gd > 0 {
					quad := kii + g.k[t*n+t] - 2*ki[t]
					if quad <= 0 {
						quad = tau
					}
					obj := -gd * gd / quad
					if p.firstOrder {
						obj = -gd
					}
					if obj <= objMin {
						objMin, jSel = obj, t
					}
				}
			}
		}
		if iSel < 0 || jSel < 0 || gmax+gmax2 < eps {
			sol.Iter, sol.Converged = iter, true
			break
		}
		i, j := iSel, jSel
		ki, kj := g.row(i), g.row(j)
		oldI, oldJ := alpha[i], alpha[j]
		Ci, Cj := bound[i], bound[j]
		quad := ki[i] + kj[j] - 2*ki[j]
		if quad <= 0 {
			quad = tau
		}
		if ys[i] != ys[j] {
			delta := (-grad[i] - grad[j]) / quad
			diff := alpha[i] - alpha[j]
			alpha[i] += delta
			alpha[j] += delta
			if diff > 0 {
				if alpha[j] < 0 {
					alpha[j], alpha[i] = 0, diff
				}
			} else if alpha[i] < 0 {
				alpha[i], alpha[j] = 0, -diff
			}
			if diff > Ci-Cj {
				if alpha[i] > Ci {
					alpha[i], alpha[j] = Ci, Ci-diff
				}
			} else if alpha[j] > Cj {
				alpha[j], alpha[i] = Cj, Cj+diff
			}
		} else {
			delta := (grad[i] - grad[j]) / quad
			sum := alpha[i] + alpha[j]
			alpha[i] -= delta
			alpha[j] += delta
			if sum > Ci {
				if alpha[i] > Ci {
					alpha[i], alpha[j] = Ci, sum-Ci
				}
			} else if alpha[j] < 0 {
				alpha[j], alpha[i] = 0, sum
			}
			if sum > Cj {
				if alpha[j] > Cj {
					alpha[j], alpha[i] = Cj, sum-Cj
				}
			} else if alpha[i] < 0 {
				alpha[i], alpha[j] = 0, sum
			}
		}
		// grad_t += Q_ti Δa_i + Q_tj Δa_j with Q_ti = y_t y_i K_ti.
		di, dj := (alpha[i]-oldI)*ys[i], (alpha[j]-oldJ)*ys[j]
		for t := 0; t < n; t++ {
			grad[t] += ys[t] * (ki[t]*di + kj[t]*dj)
		}
	}

	// Bias: the mean of y_t ∇_t over free variables, which KKT makes equal;
	// without free variables, the middle of the feasible interval.
	ub, lb := math.Inf(1), math.Inf(-1)
	var sumFree float64
	nFree := 0
	for t := 0; t < n; t++ {
		yg := ys[t] * grad[t]
		switch {
		case upper(t):
			if ys[t] < 0 {
				ub = min(ub, yg)
			} else {
				lb = max(lb, yg)
			}
		case lower(t):
			if ys[t] > 0 {
				ub = min(ub, yg)
			} else {
				lb = max(lb, yg)
			}
		default:
			nFree++
			sumFree += yg
		}
	}
	rho := (ub + lb) / 2
	if nFree > 0 {
		rho = sumFree / float64(nFree)
	}
	sol.Bias = -rho
	return sol, nil
}

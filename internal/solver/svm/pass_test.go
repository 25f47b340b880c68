package svm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// passInputs returns random pass inputs of length n whose values come from
// a few levels (ties in every comparison), with some −∞ penalties.
func passInputs(r *rand.Rand, n int) (yg, ki, kj, up, low, qd []float64) {
	level := func() float64 { return float64(r.IntN(7)-3) / 4 }
	pen := func() float64 {
		if r.IntN(3) == 0 {
			return math.Inf(-1)
		}
		return 0
	}
	yg, ki, kj = make([]float64, n), make([]float64, n), make([]float64, n)
	up, low, qd = make([]float64, n), make([]float64, n), make([]float64, n)
	for t := range n {
		yg[t], ki[t], kj[t] = level(), level(), level()
		if r.IntN(4) == 0 {
			yg[t] = r.NormFloat64()
		}
		up[t], low[t], qd[t] = pen(), pen(), 1+level()
	}
	return yg, ki, kj, up, low, qd
}

// TestPassesMatchGo: the AVX2 passes give the Go loops' results on inputs
// full of ties and −∞ penalties, for every length from 0 to 40 and a few
// longer (blocks of four and a tail): updateSelectVec the same yg, bit for
// bit, and the same maximum and index; jPassVec the same j and the same
// gmax2 (up to the sign of a zero, which only enters gmax + gmax2 < eps).
// It catches a lane merge that breaks ties to the first index, a > for a
// >=, a comparison the other way round and a block skipped that holds a
// candidate.
func TestPassesMatchGo(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2 passes on this machine")
	}
	r := rand.New(rand.NewPCG(3, 9))
	lengths := []int{64, 65, 66, 67, 257, 1001}
	for n := range 41 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for trial := range 200 {
			yg, ki, kj, up, low, qd := passInputs(r, n)
			di, dj := float64(r.IntN(5)-2)/8, r.NormFloat64()
			want := append([]float64(nil), yg...)
			wg, wi := updateSelect(want, ki, kj, up, di, dj)
			got := append([]float64(nil), yg...)
			gg, gi := updateSelectVec(got, ki, kj, up, di, dj)
			for u := range want {
				if math.Float64bits(got[u]) != math.Float64bits(want[u]) {
					t.Fatalf("n=%d trial %d: yg[%d] = %v, Go loop %v", n, trial, u, got[u], want[u])
				}
			}
			if gi != wi || math.Float64bits(gg) != math.Float64bits(wg) {
				t.Fatalf("n=%d trial %d: update pass chose %d (%v), Go loop %d (%v)", n, trial, gi, gg, wi, wg)
			}
			if n == 0 {
				continue
			}
			kii, gmax := 1+float64(r.IntN(3))/4, float64(r.IntN(9)-2)/4
			w2, wj := jPassGo(yg, low, qd, ki, kii, gmax, false)
			g2, gj := jPassVec(yg, low, qd, ki, kii, gmax)
			if gj != wj || g2 != w2 {
				t.Fatalf("n=%d trial %d: j pass chose %d (gmax2 %v), Go loop %d (%v)", n, trial, gj, g2, wj, w2)
			}
		}
	}
}

// TestSolveVectorMatchesGo: SolveBoundedFrom with the AVX2 passes returns
// the Go loops' solution bit for bit (alphas, bias, iteration count,
// convergence, BoundFree) on the problems of
// TestSolveBoundedMatchesReference, with and without shrinking and from a
// warm start: the passes take the same steps, so every model trained
// through the solver is the one the Go loops train.
func TestSolveVectorMatchesGo(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2 passes on this machine")
	}
	ctx := context.Background()
	tests := []struct {
		name       string
		n, d       int
		gamma      float64
		tol        float64
		maxIter    int
		shrinking  bool
		warm       bool
		indefinite bool
		duplicates bool
	}{
		{"plain", 61, 3, 0.5, 1e-3, 0, false, false, false, false},
		{"tight tolerance", 43, 2, 1, 1e-8, 0, false, false, false, false},
		{"shrinking", 203, 4, 0.3, 1e-5, 0, true, false, false, false},
		{"shrinking, warm start", 150, 3, 0.5, 1e-4, 0, true, true, false, false},
		{"warm start", 90, 3, 0.5, 1e-4, 0, false, true, false, false},
		{"iteration cap", 80, 3, 0.5, 1e-6, 25, true, false, false, false},
		{"indefinite matrix", 30, 2, 0.5, 1e-3, 0, false, false, true, false},
		{"duplicated examples, shrinking", 120, 2, 0.5, 1e-5, 0, true, false, false, true},
	}
	for _, tc := range tests {
		for seed := uint64(1); seed <= 6; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				X, y := randProblem(seed+300, tc.n, tc.d, 0.6)
				if tc.duplicates {
					duplicateHalf(X, y)
				}
				g := RBFGram(X, tc.gamma)
				if tc.indefinite {
					makeIndefinite(g)
				}
				r := rand.New(rand.NewPCG(seed, 11))
				bound := make([]float64, tc.n)
				for i := range bound {
					bound[i] = 0.05 + 20*r.Float64()
				}
				var alpha0 []float64
				if tc.warm {
					p := Params{Tol: 1e-2}
					sol, err := SolveBounded(ctx, g, y, bound, p)
					if err != nil {
						t.Fatal(err)
					}
					alpha0 = sol.Alpha
					for i := range bound {
						bound[i] *= 1.5
					}
				}
				p := Params{Tol: tc.tol, MaxIter: tc.maxIter, Shrinking: tc.shrinking}
				ref := p
				ref.goPasses = true
				want, err := SolveBoundedFrom(ctx, g, y, bound, alpha0, ref)
				if err != nil {
					t.Fatal(err)
				}
				got, err := SolveBoundedFrom(ctx, g, y, bound, alpha0, p)
				if err != nil {
					t.Fatal(err)
				}
				if got.Iter != want.Iter || got.Converged != want.Converged || got.Bias != want.Bias || got.BoundFree != want.BoundFree {
					t.Fatalf("iter %d converged %v bias %v bound-free %v; Go loops %d %v %v %v",
						got.Iter, got.Converged, got.Bias, got.BoundFree, want.Iter, want.Converged, want.Bias, want.BoundFree)
				}
				for i := range want.Alpha {
					if math.Float64bits(got.Alpha[i]) != math.Float64bits(want.Alpha[i]) {
						t.Fatalf("alpha[%d] = %v, Go loops %v", i, got.Alpha[i], want.Alpha[i])
					}
				}
			})
		}
	}
}

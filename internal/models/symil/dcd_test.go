package symil

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// The coordinate-ascent dual solves the same convex subproblem as the
// cutting plane, with a certificate: its own dual value (plus the κ
// constant) must be a lower bound of P_t^CCCP at every w, and P_t^CCCP at
// its w must lie within the gap tolerance of that bound. Checked against the
// converged cutting plane where that converges (small C), and at the
// paper's C = 10⁴ against the cutting plane's own dual bound (weak duality
// must hold both ways).
func TestDCDCertificate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c, lam   float64
		cpSolved bool
		rbf      bool
	}{
		{"C=1 λ=0.5", 1, 0.5, true, false},
		{"C=5 λ=1", 5, 1, true, false},
		{"C=2 λ=0", 2, 0, true, false},
		{"C=1e4 λ=0.2", 1e4, 0.2, false, false},
		{"rbf C=3 λ=0.5", 3, 0.5, true, true},
		{"rbf C=100 λ=1", 100, 1, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, p := toyProblem(11, 40, 5, 1.5, tc.c, tc.lam)
			k := gramLinear(rows)
			if tc.rbf {
				k = gramRBF(rows, autoGamma(rows), 1)
			}
			ht := p.randomLatent(rand.New(rand.NewPCG(5, 5)))
			ks := &kernelSolver{k: k, n: len(rows), iters: 400, eps: 1e-7, gapEps: 1e-7, sweeps: 5000}
			objOf := func(beta []float64) (float64, []float64) {
				s := make([]float64, len(p.gid))
				norm := 0.0
				for u, b := range beta {
					if b == 0 {
						continue
					}
					ks.addRow(p, u, b, s)
				}
				for u, b := range beta {
					norm += b * s[u]
				}
				return p.convexObjective(norm, s, ht), s
			}
			st := newDCDState(p, ht)
			r, err := ks.dcdSolve(context.Background(), p, ht, st, ks.sweeps, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				t.Fatal(err)
			}
			pd, s := objOf(r.beta)
			for l := range s {
				if math.Abs(s[l]-r.s[l]) > 1e-6*math.Max(1, math.Abs(s[l])) {
					t.Fatalf("maintained score %v drifted from recomputed %v", r.s[l], s[l])
				}
			}
			if pd < r.dual-1e-7*math.Max(1, pd) {
				t.Fatalf("P(w) = %v below the solver's dual bound %v: weak duality violated", pd, r.dual)
			}
			if tc.cpSolved && pd-r.dual > 1e-6*math.Max(1, pd) {
				t.Fatalf("gap not closed after %d sweeps: P %v, D %v", r.planes, pd, r.dual)
			}
			cp, err := ks.cuttingPlane(context.Background(), p, ht)
			if err != nil {
				t.Fatal(err)
			}
			pc, _ := objOf(cp.beta)
			t.Logf("dcd: P %.6f D %.6f (%d sweeps); cutting plane: P %.6f D %.6f (%d planes)", pd, r.dual, r.planes, pc, cp.dual, cp.planes)
			// Weak duality across solvers: each dual bound is below the
			// other solver's primal value.
			if cp.dual > pd+1e-6*math.Max(1, pd) || r.dual > pc+1e-6*math.Max(1, pc) {
				t.Fatalf("dual bounds above the other solver's primal: dcd P %v D %v, cp P %v D %v", pd, r.dual, pc, cp.dual)
			}
			if tc.cpSolved && math.Abs(pc-pd) > 1e-4*math.Max(1, pd) {
				t.Fatalf("converged solvers disagree: cutting plane %v, dcd %v", pc, pd)
			}
			if !tc.cpSolved {
				return
			}
			// Warm start: re-solving from the optimal β takes no sweep.
			r2, err := ks.dcdSolve(context.Background(), p, ht, st, ks.sweeps, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				t.Fatal(err)
			}
			if r2.planes != 0 {
				t.Errorf("warm re-solve took %d sweeps", r2.planes)
			}
		})
	}
}

// meanDistance against the distances of a 3-4-5 triangle and a collinear
// triple, and autoGamma against its definition on the same points.
func TestGammaReadings(t *testing.T) {
	for _, tc := range []struct {
		name       string
		x          [][]float64
		mean, auto float64
	}{
		{"3-4-5", [][]float64{{0, 0}, {3, 0}, {0, 4}}, 4, 1 / (50.0 / 3)},
		{"line", [][]float64{{0}, {1}, {3}}, 2, 1 / (14.0 / 3)},
	} {
		if got := meanDistance(tc.x); math.Abs(got-tc.mean) > 1e-12 {
			t.Errorf("%s: meanDistance %v, want %v", tc.name, got, tc.mean)
		}
		if got := autoGamma(tc.x); math.Abs(got-tc.auto) > 1e-12 {
			t.Errorf("%s: autoGamma %v, want %v", tc.name, got, tc.auto)
		}
	}
}

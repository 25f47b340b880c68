package symil

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// convexLoss is q_i(w) = vex_i(w) − ⟨g_cave_i, w⟩ + κ_i, the per-bag loss of
// the CCCP subproblem at frozen latent ht; q_i ≥ loss_i with equality when
// ht is inferred from the same w.
func (p *problem) convexLoss(s []float64, ht latent, i int) float64 {
	pc := p.piece(s, i)
	idx, coef, kappa := p.cave(ht, i)
	return pc.cp*s[pc.hp] + pc.cm*s[pc.hm] + pc.c0 - coef*s[idx] + kappa
}

// convexObjective is P_t^CCCP(w) up to a constant: ½‖w‖² + (C/n)Σ q_i(w).
func (p *problem) convexObjective(normSq float64, s []float64, ht latent) float64 {
	sum := 0.0
	for i := range p.n() {
		sum += p.convexLoss(s, ht, i)
	}
	return 0.5*normSq + p.c/float64(p.n())*sum
}

// toyProblem builds a binary problem in the spirit of the paper's toy
// (§6.1): every bag mixes shared background instances with class-specific
// ones (positive bags hold some instances near +mu, negative bags near −mu).
// It returns the rows (with a bias column) and the problem.
func toyProblem(seed uint64, bags, d int, sep, c, lam float64) ([][]float64, *problem) {
	r := rand.New(rand.NewPCG(seed, 99))
	var rows [][]float64
	var ids [][]int
	pos := make([]bool, bags)
	for i := range bags {
		pos[i] = i%2 == 0
		m := 2 + r.IntN(5)
		var b []int
		for j := range m {
			x := make([]float64, d+1)
			for k := range d {
				x[k] = r.NormFloat64()
			}
			if j == 0 { // the discriminative instance
				if pos[i] {
					x[0] += sep
				} else {
					x[0] -= sep
				}
			}
			x[d] = 1
			b = append(b, len(rows))
			rows = append(rows, x)
		}
		ids = append(ids, b)
	}
	return rows, newProblem(ids, pos, c, lam)
}

func randomScores(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = 3 * r.NormFloat64()
	}
	return s
}

// The convexified loss upper-bounds the eq. 3 loss for any frozen latent
// variables, and touches it when they are inferred from the same w: the
// CCCP majorisation property with the κ constant of spec §2.7.
func TestConvexLossMajorises(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, lam := range []float64{0, 0.1, 1, 10} {
		_, p := toyProblem(3, 30, 4, 2, 1, lam)
		for range 50 {
			s := randomScores(r, len(p.gid))
			ht := p.randomLatent(r)
			same := p.infer(s)
			for i := range p.n() {
				l := p.loss(s, i)
				if q := p.convexLoss(s, ht, i); q < l-1e-9 {
					t.Fatalf("λ=%v bag %d: q=%v below loss %v", lam, i, q, l)
				}
				if q := p.convexLoss(s, same, i); math.Abs(q-l) > 1e-9 {
					t.Fatalf("λ=%v bag %d: q=%v at own latent, loss %v", lam, i, q, l)
				}
				if q := p.convexLoss(s, ht, i); q < -1e-12 {
					t.Fatalf("negative convexified loss %v", q)
				}
			}
		}
	}
}

// The affine piece returned by piece (the D/E/F/G case analysis of
// Appendix B) must be a sub-gradient of vex_i: at a generic w, moving w by a
// small step along any direction changes q_i by exactly the directional
// derivative ⟨g_vex − g_cave, δ⟩, checked on real weight vectors.
func TestPieceIsGradient(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	rows, p := toyProblem(4, 20, 3, 2, 1, 0.5)
	d := len(rows[0])
	scores := func(w []float64) []float64 {
		s := make([]float64, len(p.gid))
		for l, g := range p.gid {
			s[l] = dot(w, rows[g])
		}
		return s
	}
	for range 100 {
		w := make([]float64, d)
		for j := range w {
			w[j] = r.NormFloat64()
		}
		ht := p.randomLatent(r)
		s := scores(w)
		delta := make([]float64, d)
		for j := range delta {
			delta[j] = 1e-7 * r.NormFloat64()
		}
		w2 := make([]float64, d)
		for j := range w2 {
			w2[j] = w[j] + delta[j]
		}
		s2 := scores(w2)
		for i := range p.n() {
			pc := p.piece(s, i)
			idx, coef, _ := p.cave(ht, i)
			grad := make([]float64, d)
			axpy(pc.cp, rows[p.gid[pc.hp]], grad)
			axpy(pc.cm, rows[p.gid[pc.hm]], grad)
			axpy(-coef, rows[p.gid[idx]], grad)
			got := p.convexLoss(s2, ht, i) - p.convexLoss(s, ht, i)
			want := dot(grad, delta)
			if math.Abs(got-want) > 1e-12+1e-6*math.Abs(want) {
				t.Fatalf("bag %d: Δq = %g, ⟨∇, δ⟩ = %g", i, got, want)
			}
		}
	}
}

// Spec pitfall 4: for fixed latent variables the one-slack dual with the
// linear kernel and the primal SGD solve the same convex problem. The dual
// QP value is a lower bound of min P_t^CCCP, so both solvers' objectives
// must lie just above it, and their weight vectors must agree. With the
// printed sign of g_cave for negative bags the dual would optimise another
// problem and its w would score far above its own QP value.
func TestDualMatchesPrimal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		c, lam float64
	}{{"C=1 λ=0.5", 1, 0.5}, {"C=5 λ=1", 5, 1}, {"C=2 λ=0.1", 2, 0.1}} {
		t.Run(tc.name, func(t *testing.T) {
			rows, p := toyProblem(7, 40, 5, 1.5, tc.c, tc.lam)
			ht := p.randomLatent(rand.New(rand.NewPCG(5, 5)))
			ks := &kernelSolver{k: gramLinear(rows), n: len(rows), iters: 500, eps: 1e-7}
			cp, err := ks.cuttingPlane(context.Background(), p, ht)
			if err != nil {
				t.Fatal(err)
			}
			d := len(rows[0])
			wDual := make([]float64, d)
			for l, b := range cp.beta {
				axpy(b, rows[p.gid[l]], wDual)
			}
			ls := newLinearSolver(rows, 4000, tc.c)
			w := make([]float64, d)
			tau := 0.0
			wPrimal, err := ls.sgd(context.Background(), p, ht, w, &tau, rand.New(rand.NewPCG(6, 6)))
			if err != nil {
				t.Fatal(err)
			}
			objOf := func(w []float64) float64 {
				return p.convexObjective(dot(w, w), ls.scores(p, w, nil), ht)
			}
			pd, pp := objOf(wDual), objOf(wPrimal)
			t.Logf("dual bound %.6f, P(w_dual) %.6f, P(w_sgd) %.6f, planes %d", cp.dual, pd, pp, cp.planes)
			if pd < cp.dual-1e-9 {
				t.Fatalf("primal value %v below the dual bound %v: weak duality violated", pd, cp.dual)
			}
			if pd-cp.dual > 1e-4*math.Max(1, pd) {
				t.Errorf("cutting plane not converged: P(w_dual)=%v, dual %v", pd, cp.dual)
			}
			if pp-cp.dual > 5e-3*math.Max(1, pd) {
				t.Errorf("SGD objective %v vs dual optimum %v", pp, cp.dual)
			}
			// ½‖w_sgd − w*‖² ≤ P(w_sgd) − P(w*) by 1-strong convexity.
			diff := 0.0
			for j := range wDual {
				diff += (wDual[j] - wPrimal[j]) * (wDual[j] - wPrimal[j])
			}
			if bound := 2 * (pp - cp.dual); diff > bound+1e-6 {
				t.Errorf("‖w_dual − w_sgd‖² = %v exceeds the strong-convexity bound %v", diff, bound)
			}
			if n := math.Sqrt(dot(wDual, wDual)); math.Sqrt(diff) > 0.1*n {
				t.Errorf("weights differ: ‖Δw‖ = %v, ‖w‖ = %v", math.Sqrt(diff), n)
			}
		})
	}
}

package symil

import (
	"context"
	"math"
	"math/rand/v2"
)

// linearSolver trains linear SyMIL in the primal: the CCCP outer loop of
// Alg. 1 with the stochastic sub-gradient inner solver of Alg. 2.
type linearSolver struct {
	x      [][]float64 // global rows, standardised, with the bias column when enabled
	epochs int
	// tau0 offsets the step size η_τ = 1/(τ + τ0); see newLinearSolver.
	tau0 float64
}

// newLinearSolver sets τ0 = C·R² (R² the mean squared instance norm), so the
// first step moves the score of the sampled instance by O(1) whatever C: the
// objective ½‖w‖² + (C/n)Σq_i is 1-strongly convex, so η_τ = 1/(τ+τ0) is the
// Pegasos schedule, and the offset keeps C = 10⁴ from producing a first step
// of size C·‖x‖ (spec §2.6).
func newLinearSolver(x [][]float64, epochs int, c float64) *linearSolver {
	r2 := 0.0
	for _, row := range x {
		r2 += dot(row, row)
	}
	if len(x) > 0 {
		r2 /= float64(len(x))
	}
	return &linearSolver{x: x, epochs: epochs, tau0: math.Max(1, c*r2)}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for j, v := range a {
		s += v * b[j]
	}
	return s
}

func (ls *linearSolver) scores(p *problem, w []float64, s []float64) []float64 {
	s = s[:0]
	for _, g := range p.gid {
		s = append(s, dot(w, ls.x[g]))
	}
	return s
}

// sgd minimises P_t^CCCP(w) = ½‖w‖² + (C/n)Σ_i q_i(w) at frozen latent ht,
// starting from w (updated in place) with step counter *tau. Each step
// samples a bag uniformly, re-infers its h⁺/h⁻ at the current w and follows
// the unbiased sub-gradient w + C·∂q_i(w) (Appendix B eqs. 25–29; the
// paper's C/n only rescales the step). It returns the average of the
// iterates of the second half of the epochs, which is what converges at the
// O(1/T) rate for a strongly convex non-smooth objective.
func (ls *linearSolver) sgd(ctx context.Context, p *problem, ht latent, w []float64, tau *float64, rng *rand.Rand) ([]float64, error) {
	n := p.n()
	d := len(w)
	avg := make([]float64, d)
	steps := ls.epochs * n
	half := steps / 2
	counted := 0
	var local [64]float64
	for step := range steps {
		if step%n == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		i := rng.IntN(n)
		lo, hi := p.start[i], p.start[i+1]
		s := local[:0]
		if hi-lo > len(local) {
			s = make([]float64, 0, hi-lo)
		}
		for l := lo; l < hi; l++ {
			s = append(s, dot(w, ls.x[p.gid[l]]))
		}
		pc := p.pieceBag(s, i)
		idx, coef, _ := p.cave(ht, i)
		eta := 1 / (*tau + ls.tau0)
		*tau++
		decay := 1 - eta
		for j := range w {
			w[j] *= decay
		}
		f := eta * p.c
		if pc.cp != 0 {
			axpy(-f*pc.cp, ls.x[p.gid[pc.hp]], w)
		}
		if pc.cm != 0 {
			axpy(-f*pc.cm, ls.x[p.gid[pc.hm]], w)
		}
		axpy(f*coef, ls.x[p.gid[idx]], w)
		if step >= half {
			counted++
			r := 1 / float64(counted)
			for j := range avg {
				avg[j] += r * (w[j] - avg[j])
			}
		}
	}
	if counted == 0 {
		copy(avg, w)
	}
	return avg, nil
}

func axpy(a float64, x, y []float64) {
	for j, v := range x {
		y[j] += a * v
	}
}

// fit runs CCCP from the latent init ht0 and returns the weights with the
// lowest P(w) met and that value. The loop stops when the latent variables
// are a fixed point or P decreases by less than eps·max(1, P) (spec pitfall 5:
// the decrease, not the increase), or after maxIter rounds.
func (ls *linearSolver) fit(ctx context.Context, p *problem, ht latent, maxIter int, eps float64, rng *rand.Rand) ([]float64, float64, error) {
	d := len(ls.x[0])
	w := make([]float64, d)
	best, bestP := make([]float64, d), math.Inf(1)
	tau := 0.0
	prev := math.Inf(1)
	var s []float64
	for range maxIter {
		avg, err := ls.sgd(ctx, p, ht, w, &tau, rng)
		if err != nil {
			return nil, 0, err
		}
		copy(w, avg) // warm start the next subproblem from the averaged iterate
		s = ls.scores(p, w, s)
		obj := p.objective(dot(w, w), s)
		if obj < bestP {
			bestP = obj
			copy(best, w)
		}
		next := p.infer(s)
		if next.equal(ht) || (prev-obj >= 0 && prev-obj < eps*math.Max(1, math.Abs(obj))) {
			break
		}
		prev = obj
		ht = next
	}
	return best, bestP, nil
}

package symil

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/solver/sparsesgd"
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
// starting from w (updated in place) with step counter *tau; see sgdSteps.
func (ls *linearSolver) sgd(ctx context.Context, p *problem, ht latent, w []float64, tau *float64, rng *rand.Rand) ([]float64, error) {
	return sgdSteps(ctx, p, ht, ls.x, &denseWeights{w: w, avg: make([]float64, len(w))}, ls.epochs, ls.tau0, tau, rng)
}

// weights is the SGD iterate w and the running average of its counted
// iterates over rows of type X: dense rows update w in place
// (denseWeights), sparse rows keep w = a·v (sparsesgd.Averaged) so that a
// step costs the non-zeros of the rows it touches.
type weights[X any] interface {
	Dot(x X) float64
	Decay(f float64)    // w ← f·w
	Add(f float64, x X) // w ← w + f·x
	Count()             // end a step whose iterate is averaged
	Step()              // end a step whose iterate is not
	Average() []float64 // the average of the counted iterates (w if none)
}

var (
	_ weights[[]float64]     = (*denseWeights)(nil)
	_ weights[mil.SparseVec] = (*sparsesgd.Averaged)(nil)
)

// sgdSteps runs the epochs of Alg. 2 on the weights st: each step samples
// a bag uniformly, re-infers its h⁺/h⁻ at the current w and follows the
// unbiased sub-gradient w + C·∂q_i(w) (Appendix B eqs. 25–29; the paper's
// C/n only rescales the step). It returns the average of the iterates of
// the second half of the epochs, which is what converges at the O(1/T)
// rate for a strongly convex non-smooth objective. The dense and the
// sparse solver share it, so both take the same steps.
func sgdSteps[X any](ctx context.Context, p *problem, ht latent, x []X, st weights[X], epochs int, tau0 float64, tau *float64, rng *rand.Rand) ([]float64, error) {
	n := p.n()
	steps := epochs * n
	half := steps / 2
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
			s = append(s, st.Dot(x[p.gid[l]]))
		}
		pc := p.pieceBag(s, i)
		idx, coef, _ := p.cave(ht, i)
		eta := 1 / (*tau + tau0)
		*tau++
		st.Decay(1 - eta)
		f := eta * p.c
		if pc.cp != 0 {
			st.Add(-f*pc.cp, x[p.gid[pc.hp]])
		}
		if pc.cm != 0 {
			st.Add(-f*pc.cm, x[p.gid[pc.hm]])
		}
		st.Add(f*coef, x[p.gid[idx]])
		if step >= half {
			st.Count()
		} else {
			st.Step()
		}
	}
	return st.Average(), nil
}

// denseWeights is w itself, updated in place, and the running mean of the
// counted iterates.
type denseWeights struct {
	w, avg  []float64
	counted int
}

func (d *denseWeights) Dot(x []float64) float64 { return dot(d.w, x) }

func (d *denseWeights) Decay(f float64) {
	for j := range d.w {
		d.w[j] *= f
	}
}

func (d *denseWeights) Add(f float64, x []float64) { axpy(f, x, d.w) }

func (d *denseWeights) Count() {
	d.counted++
	r := 1 / float64(d.counted)
	for j := range d.avg {
		d.avg[j] += r * (d.w[j] - d.avg[j])
	}
}

func (d *denseWeights) Step() {}

func (d *denseWeights) Average() []float64 {
	if d.counted == 0 {
		copy(d.avg, d.w)
	}
	return d.avg
}

func axpy(a float64, x, y []float64) {
	for j, v := range x {
		y[j] += a * v
	}
}

// fit runs CCCP from the latent init ht0 and returns the weights with the
// lowest P(w) met and that value; see cccp.
func (ls *linearSolver) fit(ctx context.Context, p *problem, ht latent, maxIter int, eps float64, rng *rand.Rand) ([]float64, float64, error) {
	return cccp(p, ht, len(ls.x[0]), maxIter, eps,
		func(ht latent, w []float64, tau *float64) ([]float64, error) { return ls.sgd(ctx, p, ht, w, tau, rng) },
		func(w, s []float64) []float64 { return ls.scores(p, w, s) })
}

// cccp is the outer loop of Alg. 1 for a primal solver of width weights:
// sgd solves the subproblem at the latent variables ht from w,
// scores gives every instance's score under w. The loop stops when the
// latent variables are a fixed point or P decreases by less than
// eps·max(1, P) (spec pitfall 5: the decrease, not the increase), or after
// maxIter rounds.
func cccp(p *problem, ht latent, width, maxIter int, eps float64,
	sgd func(ht latent, w []float64, tau *float64) ([]float64, error), scores func(w, s []float64) []float64) ([]float64, float64, error) {
	w := make([]float64, width)
	best, bestP := make([]float64, width), math.Inf(1)
	tau := 0.0
	prev := math.Inf(1)
	var s []float64
	for range maxIter {
		avg, err := sgd(ht, w, &tau)
		if err != nil {
			return nil, 0, err
		}
		copy(w, avg) // warm start the next subproblem from the averaged iterate
		s = scores(w, s)
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

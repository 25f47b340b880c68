package symil

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/mimlstream/mimlstream/internal/solver/qp"
)

// kernelSolver trains SyMIL in the dual: the CCCP outer loop with the
// one-slack cutting-plane inner solver of Alg. 3, for any kernel given as a
// precomputed Gram matrix over the training instances.
type kernelSolver struct {
	k     []float64 // N×N Gram matrix, row-major, global instance indices
	n     int
	iters int
	eps   float64
	qp    qp.Solver
	// dcd selects the exact dual coordinate ascent (dcd.go) instead of
	// the cutting plane; gapEps is its relative duality-gap tolerance and
	// sweeps its bound on passes over the bags.
	dcd    bool
	gapEps float64
	sweeps int
}

// gramLinear returns XXᵀ.
func gramLinear(x [][]float64) []float64 {
	n, d := len(x), len(x[0])
	xm := mat.NewDense(n, d, nil)
	for i, row := range x {
		xm.SetRow(i, row)
	}
	k := mat.NewDense(n, n, nil)
	k.Mul(xm, xm.T())
	return k.RawMatrix().Data
}

// gramRBF returns exp(−γ‖x_a − x_b‖²) + shift (shift 1 adds a regularised
// bias: the feature map gains a constant coordinate).
func gramRBF(x [][]float64, gamma, shift float64) []float64 {
	n := len(x)
	k := gramLinear(x)
	sq := make([]float64, n)
	for a := range n {
		sq[a] = k[a*n+a]
	}
	for a := range n {
		for b := range n {
			d := math.Max(0, sq[a]+sq[b]-2*k[a*n+b])
			k[a*n+b] = math.Exp(-gamma*d) + shift
		}
	}
	return k
}

// autoGamma is 1 / mean‖x − x'‖² over distinct pairs, the spec's reading of
// "the mean pairwise instance distance" (§4), computed in O(Nd) from
// mean‖x‖² − ‖mean x‖².
func autoGamma(x [][]float64) float64 {
	n := len(x)
	if n < 2 {
		return 1
	}
	d := len(x[0])
	mean := make([]float64, d)
	msq := 0.0
	for _, row := range x {
		msq += dot(row, row)
		axpy(1, row, mean)
	}
	msq /= float64(n)
	for j := range mean {
		mean[j] /= float64(n)
	}
	dist := 2 * (msq - dot(mean, mean)) * float64(n) / float64(n-1)
	if !(dist > 0) {
		return 1
	}
	return 1 / dist
}

// meanDistance is the mean Euclidean distance over distinct pairs of rows:
// the paper's "γ determined as the mean pairwise instance distance" read
// literally (gamma=meandist). It is O(N²d), once per training set.
func meanDistance(x [][]float64) float64 {
	n := len(x)
	if n < 2 {
		return 1
	}
	sum := 0.0
	for a := range n {
		for b := a + 1; b < n; b++ {
			d := 0.0
			for j, v := range x[a] {
				e := v - x[b][j]
				d += e * e
			}
			sum += math.Sqrt(d)
		}
	}
	m := sum / float64(n*(n-1)/2)
	if !(m > 0) {
		return 1
	}
	return m
}

type plane struct {
	idx  []int     // local instances with a non-zero coefficient
	coef []float64 // g = Σ coef·φ(x_idx)
	kg   []float64 // K g at every local instance: ⟨g, φ(x_l)⟩
}

func (pl *plane) dot(s []float64) float64 {
	v := 0.0
	for t, u := range pl.idx {
		v += pl.coef[t] * s[u]
	}
	return v
}

// cpResult is the solution of one CCCP subproblem.
type cpResult struct {
	beta   []float64 // w = Σ_l beta_l φ(x_l), local indices
	s      []float64 // instance scores ⟨w, φ(x_l)⟩
	normSq float64   // ‖w‖² = αᵀHα
	dual   float64   // QP value αᵀc − ½αᵀHα: a lower bound of min P_t^CCCP
	planes int
}

// cuttingPlane minimises P_t^CCCP at frozen latent ht by the one-slack
// cutting-plane method: each plane is the (1/n)-averaged affine minorant of
// the convexified loss at the current w (Alg. 3 lines 7–12, with the κ
// constant of spec §2.7 so that ξ ≥ 0 is not binding), and the dual QP over
// the planes found so far is solved exactly. Stops when the new plane is
// violated by less than eps beyond the current slack ξ (line 13).
func (ks *kernelSolver) cuttingPlane(ctx context.Context, p *problem, ht latent) (cpResult, error) {
	np := len(p.gid)
	n := float64(p.n())
	s := make([]float64, np)
	acc := make([]float64, np)
	var planes []*plane
	var cvec, alpha, h []float64
	dual := 0.0
	for it := 0; it < ks.iters; it++ {
		if err := ctx.Err(); err != nil {
			return cpResult{}, err
		}
		for l := range acc {
			acc[l] = 0
		}
		c0 := 0.0
		for i := range p.n() {
			pc := p.piece(s, i)
			idx, coef, kappa := p.cave(ht, i)
			acc[idx] += coef / n
			acc[pc.hp] -= pc.cp / n
			acc[pc.hm] -= pc.cm / n
			c0 += (pc.c0 + kappa) / n
		}
		pl := &plane{}
		for l, v := range acc {
			if v != 0 {
				pl.idx = append(pl.idx, l)
				pl.coef = append(pl.coef, v)
			}
		}
		if it > 0 {
			xi := 0.0
			for j, q := range planes {
				xi = math.Max(xi, cvec[j]-q.dot(s))
			}
			if pl.dot(s) >= c0-xi-ks.eps {
				break
			}
		}
		pl.kg = make([]float64, np)
		for a := range np {
			row := ks.k[p.gid[a]*ks.n:]
			v := 0.0
			for t, u := range pl.idx {
				v += pl.coef[t] * row[p.gid[u]]
			}
			pl.kg[a] = v
		}
		planes = append(planes, pl)
		cvec = append(cvec, c0)
		t := len(planes)
		nh := make([]float64, t*t)
		for a := range t - 1 {
			copy(nh[a*t:a*t+t-1], h[a*(t-1):(a+1)*(t-1)])
		}
		for j, q := range planes {
			v := q.dot(pl.kg)
			nh[j*t+t-1] = v
			nh[(t-1)*t+j] = v
		}
		h = nh
		res, err := ks.qp.Solve(cvec, h, p.c, append(alpha, 0))
		if err != nil {
			return cpResult{}, fmt.Errorf("cutting-plane QP with %d planes: %w", t, err)
		}
		alpha, dual = res.Alpha, res.Objective
		for l := range s {
			s[l] = 0
		}
		for j, q := range planes {
			if alpha[j] != 0 {
				axpy(alpha[j], q.kg, s)
			}
		}
	}
	beta := make([]float64, np)
	normSq := 0.0
	for j, q := range planes {
		for t, u := range q.idx {
			beta[u] += alpha[j] * q.coef[t]
		}
		normSq += alpha[j] * q.dot(s)
	}
	return cpResult{beta: beta, s: s, normSq: normSq, dual: dual, planes: len(planes)}, nil
}

// fit runs CCCP with the cutting-plane inner solver from latent init ht and
// returns the solution with the lowest P(w) met, with the same stopping
// rule as linearSolver.fit.
func (ks *kernelSolver) fit(ctx context.Context, p *problem, ht latent, maxIter int, eps float64) (cpResult, float64, error) {
	var best cpResult
	bestP, prev := math.Inf(1), math.Inf(1)
	var st *dcdState
	var rng *rand.Rand
	if ks.dcd {
		st = newDCDState(p, ht)
		rng = rand.New(rand.NewPCG(uint64(len(p.gid)), 0xdcd))
	}
	for range maxIter {
		var r cpResult
		var err error
		if ks.dcd {
			st.reset(p, ht)
			r, err = ks.dcdSolve(ctx, p, ht, st, ks.sweeps, rng)
		} else {
			r, err = ks.cuttingPlane(ctx, p, ht)
		}
		if err != nil {
			return cpResult{}, 0, err
		}
		obj := p.objective(r.normSq, r.s)
		if obj < bestP {
			best, bestP = r, obj
		}
		next := p.infer(r.s)
		if next.equal(ht) || (prev-obj >= 0 && prev-obj < eps*math.Max(1, math.Abs(obj))) {
			break
		}
		prev = obj
		ht = next
	}
	return best, bestP, nil
}

package mier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// Problem is one instance of objective (4) of Liu et al.: maximise
// J(W) = ‖WᵀB‖₁ / ‖WᵀE‖₁ over d×r matrices with orthonormal columns.
// Rows of Bt are the columns b_i = x_i − x̄ of the paper's B (with the typo
// of its Eq. 18 corrected, spec §9.1); rows of Et are the columns
// e_ij = x_j − x̄_i, one per instance i and x_j ∈ N_i ∪ {x_i}.
type Problem struct {
	Dim int
	Bt  *mat.Dense // n × d
	Et  *mat.Dense // n(K+1) × d (K may be smaller in small groups)
}

// NewProblem builds B and E from groups of instances (rows). The global
// mean x̄ is over all instances; the K nearest neighbours of an instance
// (Euclidean, ties to the lower index) are searched within its own group,
// K capped at the group size minus one (spec §9.8: K = min{3, n} counts the
// instance itself). A group of one instance contributes to B only.
func NewProblem(groups [][][]float64, k int) (*Problem, error) {
	var d, n, m int
	for _, g := range groups {
		for _, x := range g {
			if d == 0 {
				d = len(x)
			}
			if len(x) != d || d == 0 {
				return nil, fmt.Errorf("mier: instances of dimension %d and %d", d, len(x))
			}
			n++
		}
		m += len(g) * (min(k, len(g)-1) + 1)
	}
	if n == 0 {
		return nil, errors.New("mier: no instances")
	}
	mean := make([]float64, d)
	for _, g := range groups {
		for _, x := range g {
			for j, v := range x {
				mean[j] += v
			}
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	p := &Problem{Dim: d, Bt: mat.NewDense(n, d, nil), Et: mat.NewDense(m, d, nil)}
	bi, ei := 0, 0
	local := make([]float64, d)
	for _, g := range groups {
		kk := min(k, len(g)-1)
		for i, x := range g {
			row := p.Bt.RawRowView(bi)
			for j, v := range x {
				row[j] = v - mean[j]
			}
			bi++
			nb := append(neighbours(g, i, kk), i)
			clear(local)
			for _, t := range nb {
				for j, v := range g[t] {
					local[j] += v
				}
			}
			for j := range local {
				local[j] /= float64(len(nb))
			}
			for _, t := range nb {
				row := p.Et.RawRowView(ei)
				for j, v := range g[t] {
					row[j] = v - local[j]
				}
				ei++
			}
		}
	}
	return p, nil
}

// neighbours returns the k nearest other members of g to g[i].
func neighbours(g [][]float64, i, k int) []int {
	if k <= 0 {
		return nil
	}
	idx := make([]int, 0, len(g)-1)
	dist := make([]float64, len(g))
	for t := range g {
		if t == i {
			continue
		}
		idx = append(idx, t)
		var s float64
		for j, v := range g[t] {
			e := v - g[i][j]
			s += e * e
		}
		dist[t] = s
	}
	sort.SliceStable(idx, func(a, b int) bool { return dist[idx[a]] < dist[idx[b]] })
	return idx[:k]
}

// l1 returns ‖A W‖₁ (entrywise). When gs is non-nil it also accumulates
// Aᵀ sign(A W) into it (d×r, sign(0) = 0), scaled by coef. Raw loops over
// the rows: r is small, and this is the inner loop of the whole method.
func l1(a, w *mat.Dense, gs *mat.Dense, coef float64) float64 {
	n, d := a.Dims()
	_, r := w.Dims()
	wr := w.RawMatrix()
	proj := make([]float64, r)
	var sum float64
	for i := 0; i < n; i++ {
		row := a.RawRowView(i)
		clear(proj)
		for j, v := range row {
			if v == 0 {
				continue
			}
			wrow := wr.Data[j*wr.Stride : j*wr.Stride+r]
			for g, x := range wrow {
				proj[g] += v * x
			}
		}
		for g, p := range proj {
			sum += math.Abs(p)
			proj[g] = coef * sgn(p)
		}
		if gs != nil {
			gr := gs.RawMatrix()
			for j, v := range row[:d] {
				grow := gr.Data[j*gr.Stride : j*gr.Stride+r]
				for g, sg := range proj {
					grow[g] += v * sg
				}
			}
		}
	}
	return sum
}

func sgn(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// Objective returns H(W) = ‖WᵀB‖₁ and M(W) = ‖WᵀE‖₁ (Eqs. 13, 14).
func (p *Problem) Objective(w *mat.Dense) (h, m float64) {
	return l1(p.Bt, w, nil, 0), l1(p.Et, w, nil, 0)
}

// Subgradient returns G = B sign(BᵀW) − λ E sign(EᵀW), the subgradient of
// the surrogate L(·, W) at W (Eq. 28). It equals
// B sign(BᵀW) − λ [A_1 w_1, …, A_r w_r] with the A_g of Eq. (19), since
// A_g w_g = Σ e eᵀw_g / |eᵀw_g| = Σ e sign(eᵀw_g); the sign form needs no
// d×d matrix and no division by a projection that may be zero (spec §9.3).
func (p *Problem) Subgradient(w *mat.Dense, lambda float64) *mat.Dense {
	d, r := w.Dims()
	g := mat.NewDense(d, r, nil)
	l1(p.Bt, w, g, 1)
	l1(p.Et, w, g, -lambda)
	return g
}

// Polar returns the orthonormal polar factor U Vᵀ of the thin SVD
// A = U Σ Vᵀ: the matrix with orthonormal columns nearest to A in Frobenius
// norm (the projection P of Algorithm 2).
func Polar(a mat.Matrix) (*mat.Dense, error) {
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		return nil, errors.New("mier: SVD did not converge")
	}
	var u, v, out mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	out.Mul(&u, v.T())
	return &out, nil
}

// RandomOrthonormal returns the polar factor of a d×r Gaussian matrix.
func RandomOrthonormal(rng *rand.Rand, d, r int) *mat.Dense {
	a := mat.NewDense(d, r, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < r; j++ {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	w, err := Polar(a)
	if err != nil {
		// A Gaussian matrix has full rank with probability one and the SVD
		// of a small dense matrix does not fail; keep going with QR-free
		// columns rather than panic.
		return a
	}
	return w
}

// Options tune Algorithms 2 and 3. The paper gives none of them (spec §2.6).
type Options struct {
	R int
	// Beta is the Armijo factor of Algorithm 2: trial steps β, β², …
	Beta float64
	// MaxIter bounds outer iterations (Algorithm 3), MaxBacktrack the
	// halvings of one inner search; a failed search means convergence
	// (spec §9.5).
	MaxIter, MaxBacktrack int
	// Tol stops when the relative increase of J falls below it.
	Tol float64
	// Normalize scales G to the Frobenius norm of W before the step, so that
	// the first trial step does not depend on the number and scale of the
	// instances (spec §9.6; a documented deviation — the paper's steps are
	// β^m G).
	Normalize bool
	// Guard restricts W to the span of E's columns (see Fit).
	Guard bool
	// Adaptive starts each backtracking search at the step accepted last
	// time divided by β (capped at β) instead of at β: the acceptance test
	// is unchanged, so J still rises at every step, but far fewer trial
	// points are evaluated once the iteration has found its scale
	// (a documented deviation from Algorithm 2's m = 1 restart).
	Adaptive bool
}

// DefaultOptions are the settings used when a model does not override them.
func DefaultOptions(r int) Options {
	return Options{R: r, Beta: 0.5, MaxIter: 300, MaxBacktrack: 40, Tol: 1e-6, Normalize: false, Guard: true, Adaptive: true}
}

// Result is the outcome of Fit.
type Result struct {
	W *mat.Dense
	// J holds the objective at W⁰ and after every accepted outer step.
	J []float64
	// Converged is false when MaxIter stopped the iteration.
	Converged bool
	// Degenerate is set when the guard found the local scatter of rank
	// below r: no W with r columns keeps M(W) away from zero, so W⁰ is
	// returned unchanged.
	Degenerate bool
}

// Fit runs Algorithm 3 (non-greedy ratio maximisation) from w0, which must
// have orthonormal columns: λ ← J(W), then Algorithm 2 (projected
// subgradient step W ← P(W + β^m G) with backtracking until the ratio rises).
// J is non-decreasing by construction.
//
// Guard (spec §9.4). When the neighbour graph is disconnected, directions
// that separate its components are orthogonal to every e_ij but not to B, so
// M(W) → 0 and J → ∞: the ratio has no maximum and the iteration runs off to
// a degenerate W. With Guard set, W is restricted to span(E) = range of the
// local scatter S_L, where M is bounded away from zero on the compact set of
// orthonormal W (the condition m(v) ≥ C₁ > 0 of Theorem 1 holds again). When
// the graph is connected, span(E) = span(B) and the guard changes nothing.
// If rank(S_L) < r the problem is degenerate for any W, and W⁰ is returned.
func (p *Problem) Fit(ctx context.Context, w0 *mat.Dense, opt Options) (Result, error) {
	d, r := w0.Dims()
	if d != p.Dim || r != opt.R || r < 1 || r > d {
		return Result{}, fmt.Errorf("mier: W⁰ is %d×%d for d=%d, r=%d", d, r, p.Dim, opt.R)
	}
	if !(opt.Beta > 0 && opt.Beta < 1) {
		return Result{}, fmt.Errorf("mier: Armijo beta %v not in (0,1)", opt.Beta)
	}
	prob, basis := p, (*mat.Dense)(nil)
	z := w0
	if opt.Guard {
		q, degenerate := p.localBasis(r)
		if degenerate {
			h, m := p.Objective(w0)
			return Result{W: w0, J: []float64{ratio(h, m)}, Converged: true, Degenerate: true}, nil
		}
		if q != nil {
			basis = q
			prob = p.restrict(q)
			// Start from the projection of W⁰ onto the subspace.
			var zz mat.Dense
			zz.Mul(q.T(), w0)
			var err error
			if z, err = Polar(&zz); err != nil {
				return Result{}, err
			}
		}
	}
	res, err := prob.ascend(ctx, z, opt)
	if err != nil {
		return Result{}, err
	}
	if basis != nil {
		var w mat.Dense
		w.Mul(basis, res.W)
		res.W = &w
	}
	return res, nil
}

// ratio is H/M with 0/0 = 0 (a group of identical instances: nothing to
// learn, and no step can make the ratio rise).
func ratio(h, m float64) float64 {
	if m == 0 {
		if h == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return h / m
}

func (p *Problem) ascend(ctx context.Context, w *mat.Dense, opt Options) (Result, error) {
	h, m := p.Objective(w)
	j := ratio(h, m)
	res := Result{W: w, J: []float64{j}}
	if math.IsInf(j, 0) || j == 0 {
		// M = 0 with H > 0 (unguarded degenerate start) or nothing to fit.
		res.Converged = true
		return res, nil
	}
	last := opt.Beta
	for it := 0; it < opt.MaxIter; it++ {
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("mier fit: %w", err)
		}
		lambda := j
		g := p.Subgradient(w, lambda)
		gn := mat.Norm(g, 2)
		if gn == 0 {
			res.Converged = true
			return res, nil
		}
		if opt.Normalize {
			g.Scale(mat.Norm(w, 2)/gn, g)
		}
		step := opt.Beta
		if opt.Adaptive {
			step = min(maxStep, last/opt.Beta)
		}
		accepted := false
		var next *mat.Dense
		var nh, nm float64
		for bt := 0; bt < opt.MaxBacktrack; bt++ {
			var trial mat.Dense
			trial.Scale(step, g)
			trial.Add(w, &trial)
			cand, err := Polar(&trial)
			if err != nil {
				return Result{}, err
			}
			nh, nm = p.Objective(cand)
			// F(W) = H − λM > 0 ⇔ J(W) > λ (Algorithm 2's test).
			if nh-lambda*nm > 0 {
				next, accepted, last = cand, true, step
				break
			}
			step *= opt.Beta
		}
		if !accepted {
			res.Converged = true
			return res, nil
		}
		w = next
		nj := ratio(nh, nm)
		res.W, res.J = w, append(res.J, nj)
		rel := (nj - j) / j
		j = nj
		if math.IsInf(j, 0) || rel < opt.Tol {
			res.Converged = true
			return res, nil
		}
	}
	return res, nil
}

// localBasis returns an orthonormal basis of span(E) when it is a proper
// subspace of R^d (nil when it is all of R^d), and whether its dimension is
// below r.
func (p *Problem) localBasis(r int) (*mat.Dense, bool) {
	var svd mat.SVD
	if !svd.Factorize(p.Et, mat.SVDThinV) {
		return nil, true
	}
	s := svd.Values(nil)
	if len(s) == 0 || s[0] == 0 {
		return nil, true
	}
	q := 0
	for _, v := range s {
		if v > 1e-9*s[0] {
			q++
		}
	}
	if q < r {
		return nil, true
	}
	if q == p.Dim {
		return nil, false
	}
	var v mat.Dense
	svd.VTo(&v)
	return mat.DenseCopyOf(v.Slice(0, p.Dim, 0, q)), false
}

// restrict expresses the problem in the coordinates of an orthonormal basis
// Q (d×q): with W = QZ, ‖WᵀB‖₁ = ‖Zᵀ(QᵀB)‖₁ and ZᵀZ = WᵀW.
func (p *Problem) restrict(q *mat.Dense) *Problem {
	_, k := q.Dims()
	var b, e mat.Dense
	b.Mul(p.Bt, q)
	e.Mul(p.Et, q)
	return &Problem{Dim: k, Bt: &b, Et: &e}
}

// maxStep bounds the adaptive trial step; beyond it P(W + tG) ≈ P(G) and a
// larger t changes nothing.
const maxStep = 1e6

// PCA returns the top-r eigenvectors of the global scatter S_G = B Bᵀ, the
// maximiser of J_Global (Eq. 1) — the baseline the ℓ1 ratio is compared to.
func (p *Problem) PCA(r int) (*mat.Dense, error) {
	var sg mat.SymDense
	sg.SymOuterK(1, p.Bt.T())
	var eig mat.EigenSym
	if !eig.Factorize(&sg, true) {
		return nil, errors.New("mier: eigendecomposition did not converge")
	}
	var v mat.Dense
	eig.VectorsTo(&v)
	// Eigenvalues are ascending: the last r columns, largest first.
	w := mat.NewDense(p.Dim, r, nil)
	for g := 0; g < r; g++ {
		w.SetCol(g, mat.Col(nil, p.Dim-1-g, &v))
	}
	return w, nil
}

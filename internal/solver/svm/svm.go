package svm

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// ErrBadInput marks training input the solver cannot use (no examples,
// ragged rows, non-finite values, non-positive C or gamma).
var ErrBadInput = errors.New("svm: bad input")

// Params are the hyper-parameters of one binary SVM.
type Params struct {
	// C bounds each dual variable (the box constraint); larger C penalises
	// training errors more.
	C float64 `json:"c"`
	// Gamma is the RBF width: K(x, z) = exp(−Gamma ‖x − z‖²).
	Gamma float64 `json:"gamma"`
	// Tol is the stopping tolerance on the maximal KKT violation; 0 means 1e-3
	// (LIBSVM's default).
	Tol float64 `json:"tol,omitempty"`
	// MaxIter caps SMO iterations; 0 means max(10⁷, 100n) as in LIBSVM.
	MaxIter int `json:"max_iter,omitempty"`

	// Shrinking drops from the selection passes the variables at a bound
	// whose gradient keeps them out of any violating pair (LIBSVM's
	// rule), and puts them all back before convergence is declared, so
	// the optimum satisfies the tolerance on every variable. The
	// gradient of every variable is still updated each step (no
	// reconstruction), so only the j pass, the dearer one, shrinks. The
	// steps differ from the unshrunk solver's, so the solution is the
	// same optimum to the tolerance, not the same floats.
	Shrinking bool `json:"shrinking,omitempty"`

	// firstOrder selects j by the maximal violation alone (the maximal
	// violating pair of Keerthi et al.), for the benchmark that measures
	// what second-order selection buys.
	firstOrder bool
	// onShrink, for tests, is called after each shrinking with the
	// number of active variables, and with atConvergence set when the
	// active variables had converged but the check over all of them,
	// after putting the shrunk ones back, found a violation.
	onShrink func(active int, atConvergence bool)
	// goPasses runs the selection passes as Go loops even where the AVX2
	// ones exist: the reference the vector passes are held to.
	goPasses bool
}

func (p Params) validate() error {
	if !(p.C > 0) || math.IsInf(p.C, 0) {
		return fmt.Errorf("%w: C=%v must be positive and finite", ErrBadInput, p.C)
	}
	if !(p.Gamma > 0) || math.IsInf(p.Gamma, 0) {
		return fmt.Errorf("%w: gamma=%v must be positive and finite", ErrBadInput, p.Gamma)
	}
	if p.Tol < 0 || p.MaxIter < 0 {
		return fmt.Errorf("%w: negative tol or max_iter", ErrBadInput)
	}
	return nil
}

func (p Params) tol() float64 {
	if p.Tol > 0 {
		return p.Tol
	}
	return 1e-3
}

// Model is a trained binary SVM: f(x) = Σ_i Coef_i K(SV_i, x) + Bias, with
// Coef_i = a_i y_i over the support vectors (a_i > 0). A model trained on one
// class only has no support vectors and a constant decision ±1.
type Model struct {
	Gamma float64     `json:"gamma"`
	SV    [][]float64 `json:"sv"`
	Coef  []float64   `json:"coef"`
	Bias  float64     `json:"bias"`
}

// Decision returns the signed decision value of x; positive means the
// positive class. It is safe for concurrent use.
func (m *Model) Decision(x []float64) float64 {
	f := m.Bias
	for i, sv := range m.SV {
		f += m.Coef[i] * math.Exp(-m.Gamma*sqDist(sv, x))
	}
	return f
}

// Validate checks that a decoded model is usable with inputs of dimension dim.
func (m *Model) Validate(dim int) error {
	if len(m.SV) != len(m.Coef) {
		return fmt.Errorf("svm model: %d support vectors but %d coefficients", len(m.SV), len(m.Coef))
	}
	if len(m.SV) > 0 && !(m.Gamma > 0) {
		return fmt.Errorf("svm model: gamma %v", m.Gamma)
	}
	for i, sv := range m.SV {
		if len(sv) != dim {
			return fmt.Errorf("svm model: support vector %d has dimension %d, want %d", i, len(sv), dim)
		}
	}
	return nil
}

func sqDist(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		d := v - b[i]
		s += d * d
	}
	return s
}

// Train fits a binary SVM on rows X with labels y (true = positive class).
func Train(ctx context.Context, X [][]float64, y []bool, p Params) (*Model, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if err := checkData(X, y); err != nil {
		return nil, err
	}
	if m, ok := constantModel(y); ok {
		return m, nil
	}
	sol, err := Solve(ctx, RBFGram(X, p.Gamma), y, p)
	if err != nil {
		return nil, err
	}
	return sol.model(X, y, p.Gamma), nil
}

// constantModel handles a training set with a single class, where the dual
// forces every a_i to 0 and the bias is undefined: the model then always
// answers that class, with margin 1.
func constantModel(y []bool) (*Model, bool) {
	pos := 0
	for _, v := range y {
		if v {
			pos++
		}
	}
	switch pos {
	case 0:
		return &Model{Bias: -1}, true
	case len(y):
		return &Model{Bias: 1}, true
	}
	return nil, false
}

func checkData(X [][]float64, y []bool) error {
	if len(X) == 0 {
		return fmt.Errorf("%w: no training examples", ErrBadInput)
	}
	if len(X) != len(y) {
		return fmt.Errorf("%w: %d examples but %d labels", ErrBadInput, len(X), len(y))
	}
	d := len(X[0])
	for i, x := range X {
		if len(x) != d {
			return fmt.Errorf("%w: example %d has dimension %d, want %d", ErrBadInput, i, len(x), d)
		}
		for _, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: example %d is not finite", ErrBadInput, i)
			}
		}
	}
	return nil
}

// Gram is a dense symmetric kernel matrix.
type Gram struct {
	n int
	k []float64
}

// RBFGram computes K_ij = exp(−gamma ‖x_i − x_j‖²).
func RBFGram(X [][]float64, gamma float64) *Gram {
	n := len(X)
	g := &Gram{n: n, k: make([]float64, n*n)}
	for i := 0; i < n; i++ {
		g.k[i*n+i] = 1
		for j := i + 1; j < n; j++ {
			v := math.Exp(-gamma * sqDist(X[i], X[j]))
			g.k[i*n+j] = v
			g.k[j*n+i] = v
		}
	}
	return g
}

// NewGram wraps a row-major n×n symmetric kernel matrix (not copied).
func NewGram(n int, k []float64) (*Gram, error) {
	if len(k) != n*n {
		return nil, fmt.Errorf("%w: gram of %d entries for n=%d", ErrBadInput, len(k), n)
	}
	return &Gram{n: n, k: k}, nil
}

// Sub returns the Gram matrix restricted to the examples idx, in that order.
// For idx = 0, 1, …, n−1 it returns g itself instead of a copy (a Gram is
// never modified): mi-SVM trains every relabeling round on all training
// instances in order, and copying the n² entries per round cost it a fifth
// of its time.
func (g *Gram) Sub(idx []int) *Gram {
	return g.SubInto(idx, nil)
}

// SubInto is Sub writing the copy into buf when it has the capacity (a
// buffer reused from round to round spares the allocation, and the garbage
// collections it caused); nil or a short buf allocates.
func (g *Gram) SubInto(idx []int, buf []float64) *Gram {
	m := len(idx)
	if m == g.n {
		identity := true
		for a, i := range idx {
			if a != i {
				identity = false
				break
			}
		}
		if identity {
			return g
		}
	}
	if cap(buf) < m*m {
		buf = make([]float64, m*m)
	}
	s := &Gram{n: m, k: buf[:m*m]}
	for a, i := range idx {
		row := g.k[i*g.n:]
		for b, j := range idx {
			s.k[a*m+b] = row[j]
		}
	}
	return s
}

// Len is the number of examples.
func (g *Gram) Len() int { return g.n }

// Data returns the row-major entries (shared, do not modify), as NewGram
// took them; a buffer for SubInto to reuse.
func (g *Gram) Data() []float64 { return g.k }

// At returns K_ij.
func (g *Gram) At(i, j int) float64 { return g.k[i*g.n+j] }

// Row returns row i (shared, do not modify): K_ij for every j.
func (g *Gram) Row(i int) []float64 { return g.row(i) }

func (g *Gram) row(i int) []float64 { return g.k[i*g.n : (i+1)*g.n] }

// Solution is the optimum of the dual found by Solve.
type Solution struct {
	Alpha []float64
	// Bias b of f(x) = Σ a_i y_i K(x_i, x) + b (LIBSVM's −rho).
	Bias      float64
	Iter      int
	Converged bool
	// BoundFree reports that no alpha reached its upper bound at any
	// point of the run, the start included. Then every bound was inert:
	// SolveBoundedFrom with the same matrix, labels, start and Params
	// and bounds no smaller (each bound'[i] ≥ bound[i]) takes the same
	// steps and returns the same floats (TestBoundFreeSolutionIsReused),
	// which lets a search over C skip a larger C's solve.
	BoundFree bool
}

// Decision returns f at training example t of the Gram matrix.
func (s Solution) Decision(g *Gram, y []bool, t int) float64 {
	f := s.Bias
	row := g.row(t)
	for i, a := range s.Alpha {
		if a != 0 {
			f += a * sign(y[i]) * row[i]
		}
	}
	return f
}

// Objective is the dual objective ½ aᵀQa − Σ a (minimised).
func (s Solution) Objective(g *Gram, y []bool) float64 {
	var quad, lin float64
	for i, ai := range s.Alpha {
		lin += ai
		if ai == 0 {
			continue
		}
		row := g.row(i)
		for j, aj := range s.Alpha {
			quad += ai * aj * sign(y[i]) * sign(y[j]) * row[j]
		}
	}
	return quad/2 - lin
}

func (s Solution) model(X [][]float64, y []bool, gamma float64) *Model {
	m := &Model{Gamma: gamma, Bias: s.Bias}
	for i, a := range s.Alpha {
		if a > 0 {
			m.SV = append(m.SV, append([]float64(nil), X[i]...))
			m.Coef = append(m.Coef, a*sign(y[i]))
		}
	}
	return m
}

func sign(b bool) float64 {
	if b {
		return 1
	}
	return -1
}

// positivePart is max(x, 0) for the finite x of the selection passes,
// without a branch or the builtin's NaN and signed-zero handling: the sign
// bit, spread over the word, clears a negative x (and −0) to +0. The j
// passes compute it for every example; as the builtin it was a tenth of
// their time (pprof -list).
func positivePart(x float64) float64 {
	b := math.Float64bits(x)
	return math.Float64frombits(b &^ uint64(int64(b)>>63))
}

// tau replaces a non-positive curvature (a kernel that is not strictly
// positive definite on the pair) so the two-variable step stays finite.
const tau = 1e-12

// startFrom checks that alpha0 is feasible, copies it to alpha and adds
// Q·alpha0 to grad (addRow, with vec in AVX2: the same floats); it
// reports whether some alpha0_i is at its bound.
func startFrom(vec bool, g *Gram, ys, bound, alpha0, alpha, grad []float64) (bool, error) {
	n := g.n
	if len(alpha0) != n {
		return false, fmt.Errorf("%w: %d starting alphas for %d examples", ErrBadInput, len(alpha0), n)
	}
	var sum, abs float64
	atUpper := false
	for i, a := range alpha0 {
		if !(a >= 0 && a <= bound[i]) {
			return false, fmt.Errorf("%w: starting alpha[%d]=%v outside [0, %v]", ErrBadInput, i, a, bound[i])
		}
		atUpper = atUpper || a >= bound[i]
		sum += ys[i] * a
		abs += a
	}
	if math.Abs(sum) > 1e-9*max(abs, 1) {
		return false, fmt.Errorf("%w: starting alphas violate Σ y·alpha = 0 (%v)", ErrBadInput, sum)
	}
	copy(alpha, alpha0)
	for s, a := range alpha0 {
		if a == 0 {
			continue
		}
		addRow(vec, grad, ys, g.row(s), a*ys[s])
	}
	return atUpper, nil
}

// shrinkEvery is the number of steps between two shrinkings (LIBSVM:
// min(n, 1000); the misvm problems take a few hundred steps on a few
// hundred variables, so LIBSVM's period would rarely shrink at all).
const shrinkEvery = 50

// shrinkActive removes from act the variables that cannot be part of a
// violating pair (LIBSVM's be_shrunk, in y·∇ terms): one in I_up only
// whose −yg lies below every I_low value's −yg (yg > max over I_low of
// yg), or one in I_low only whose −yg lies above gmax, the maximum over
// I_up. The maxima are those of the active variables, as in LIBSVM. The
// first time the violation gmax + gmax2 is within 10·eps, every variable
// is put back first (unshrink; relaxed becomes true), since the early
// shrinking used gradients far from the optimum's. A shrunk variable's
// upSel and lowSel entries become −∞.
func shrinkActive(act []int, yg, upPen, lowPen, upSel, lowSel []float64, gmax, eps float64, relaxed bool, unshrink func()) ([]int, bool) {
	gmax2 := math.Inf(-1)
	for _, t := range act {
		if v := yg[t] + lowPen[t]; v > gmax2 {
			gmax2 = v
		}
	}
	if !relaxed && gmax+gmax2 <= 10*eps {
		relaxed = true
		unshrink()
		act = act[:len(yg)]
		gmax2 = math.Inf(-1)
		for _, t := range act {
			if v := yg[t] + lowPen[t]; v > gmax2 {
				gmax2 = v
			}
		}
	}
	k := 0
	for _, t := range act {
		upOnly := upPen[t] == 0 && lowPen[t] != 0
		lowOnly := lowPen[t] == 0 && upPen[t] != 0
		if (upOnly && yg[t] > gmax2) || (lowOnly && -yg[t] > gmax) {
			upSel[t], lowSel[t] = math.Inf(-1), math.Inf(-1)
			continue
		}
		act[k] = t
		k++
	}
	return act[:k], relaxed
}

// Solve runs SMO with second-order working-set selection on the dual of the
// C-SVM with Gram matrix g and labels y. Only p.C, p.Tol and p.MaxIter are
// used; the kernel is g. Both classes must be present.
func Solve(ctx context.Context, g *Gram, y []bool, p Params) (Solution, error) {
	if !(p.C > 0) || math.IsInf(p.C, 0) {
		return Solution{}, fmt.Errorf("%w: C=%v", ErrBadInput, p.C)
	}
	bound := make([]float64, g.n)
	for i := range bound {
		bound[i] = p.C
	}
	return SolveBounded(ctx, g, y, bound, p)
}

// SolveBounded is Solve with a box of its own for every example,
// 0 ≤ a_i ≤ bound[i] (p.C is ignored): the weighted C-SVM of LIBSVM's
// per-class weights, generalised to one weight per example, which
// class-balanced and cost-sensitive problems need. The two-variable step
// clips to both boxes as LIBSVM's Solver does with C_i ≠ C_j.
func SolveBounded(ctx context.Context, g *Gram, y []bool, bound []float64, p Params) (Solution, error) {
	return SolveBoundedFrom(ctx, g, y, bound, nil, p)
}

// SolveBoundedFrom is SolveBounded started from the dual point alpha0
// instead of 0 (nil: from 0, exactly SolveBounded): a warm start from the
// solution of a nearby problem, which needs fewer iterations. alpha0 must
// be feasible: 0 ≤ alpha0_i ≤ bound[i] and Σ y_i alpha0_i = 0 (to 1e-9 of
// Σ alpha0_i). The optimum is the same to the tolerance, not the same
// floats as from 0.
func SolveBoundedFrom(ctx context.Context, g *Gram, y []bool, bound, alpha0 []float64, p Params) (Solution, error) {
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
	// vec: the AVX2 passes (pass.go), the same choices as the Go loops.
	vec := haveAVX2 && !p.goPasses && !p.firstOrder
	// atUpper: some alpha has been at its upper bound (Solution.BoundFree).
	atUpper := false
	if alpha0 != nil {
		var err error
		if atUpper, err = startFrom(vec, g, ys, bound, alpha0, alpha, grad); err != nil {
			return Solution{}, err
		}
	}
	// qd holds the diagonal K_tt, read n times per iteration: a strided
	// walk through the matrix otherwise.
	qd := make([]float64, n)
	for t := range qd {
		qd[t] = g.k[t*n+t]
	}
	upper := func(t int) bool { return alpha[t] >= bound[t] }
	lower := func(t int) bool { return alpha[t] <= 0 }
	bound = bound[:n]
	// The loop works on yg_t = y_t ∇_t, which is exactly y_t times the
	// gradient the textbook update keeps (y_t = ±1: negation commutes with
	// rounding, so y_t·fl(∇_t + y_t·u) = fl(y_t∇_t + u)). In it both
	// selections read the same quantity whatever the label: i maximises
	// −yg over I_up, j's pair violation is gmax + yg over I_low. The sets
	// are kept as penalties, 0 for a member and −∞ otherwise (upPen for
	// I_up, lowPen for I_low), updated for the two alphas a step moves:
	// a penalised value never wins a comparison against a member's, so
	// the passes choose what the tests on the labels and bounds chose, in
	// the same order, without branching on them per example.
	yg := grad
	for t := range yg {
		yg[t] *= ys[t]
	}
	upPen, lowPen := make([]float64, n), make([]float64, n)
	negInf := math.Inf(-1)
	member := func(t int) {
		up, low := !upper(t), !lower(t)
		if ys[t] < 0 {
			up, low = low, up
		}
		upPen[t], lowPen[t] = 0, 0
		if !up {
			upPen[t] = negInf
		}
		if !low {
			lowPen[t] = negInf
		}
	}
	for t := range n {
		member(t)
	}
	// With shrinking, act lists the active variables in index order (the
	// j pass walks it), upSel is upPen with −∞ for a shrunk variable (the
	// i search of the update pass reads it), shrinkIn counts the steps to
	// the next shrinking and relaxed records that the variables shrunk
	// early were put back once the violation came near the tolerance.
	upSel, lowSel := upPen, lowPen
	var act []int
	shrinkIn, relaxed, reopened := 0, false, false
	if p.Shrinking {
		upSel, lowSel = make([]float64, n), make([]float64, n)
		copy(upSel, upPen)
		copy(lowSel, lowPen)
		act = make([]int, n)
		for t := range act {
			act[t] = t
		}
		shrinkIn = min(n, shrinkEvery)
	}
	unshrink := func() {
		act = act[:n]
		for t := range act {
			act[t] = t
		}
		copy(upSel, upPen)
		copy(lowSel, lowPen)
	}
	if p.Shrinking {
		member = func(t int) {
			up, low := !upper(t), !lower(t)
			if ys[t] < 0 {
				up, low = low, up
			}
			upPen[t], lowPen[t] = 0, 0
			if !up {
				upPen[t] = negInf
			}
			if !low {
				lowPen[t] = negInf
			}
			// t is active: it was just selected.
			upSel[t], lowSel[t] = upPen[t], lowPen[t]
		}
	}

	// Working set selection 2 (Fan, Chen, Lin 2005): i maximises
	// −y_t ∇_t over I_up; j minimises the second-order decrease −b²/a
	// among the indices violating the pair condition with i. The search
	// for i of the next iteration runs in the same pass as the gradient
	// update (the same comparisons in the same order as a pass of its
	// own, so the same i), which saves one of three passes over the
	// examples per iteration.
	gmax, iSel := negInf, -1
	for t := 0; t < n; t++ {
		if v := upPen[t] - yg[t]; v >= gmax && upPen[t] == 0 {
			gmax, iSel = v, t
		}
	}
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
		if p.Shrinking {
			if shrinkIn--; shrinkIn <= 0 {
				shrinkIn = min(n, shrinkEvery)
				act, relaxed = shrinkActive(act, yg, upPen, lowPen, upSel, lowSel, gmax, eps, relaxed, unshrink)
				if p.onShrink != nil {
					p.onShrink(len(act), false)
				}
			}
		}
		gmax2, jSel, objMin := negInf, -1, math.Inf(1)
		if iSel >= 0 && vec && (!p.Shrinking || 4*len(act) >= n) {
			// Every example, a shrunk one's lowSel −∞ (the same
			// choices as walking act); when fewer than a quarter are
			// active, walking act in Go is the cheaper of the two
			// (Musk1's inner CV: 2, 4, 8 and always measured level
			// within the noise, 4 a little ahead).
			ki := g.row(iSel)
			gmax2, jSel = jPassVec(yg, lowSel, qd, ki, ki[iSel], gmax)
		} else if iSel >= 0 && p.Shrinking && len(act) < n {
			// The j pass over the active variables only: jPassFrom's
			// loop walking act. It is a loop of its own because
			// walking an index list where all variables are active
			// cost the unshrunk solver 8–11% (BenchmarkSolve,
			// benchstat, 6 runs).
			ki := g.row(iSel)[:n]
			kii := ki[iSel]
			yg, lowPen, qd := yg[:n], lowPen[:n], qd[:n]
			firstOrder := p.firstOrder
			thr := math.Inf(-1)
			for _, t := range act {
				v := yg[t] + lowPen[t]
				if v > gmax2 {
					gmax2 = v
				}
				gd := gmax + v
				gp := positivePart(gd)
				quad := kii + qd[t] - 2*ki[t]
				if quad <= 0 {
					quad = tau
				}
				if gp*gp < thr*quad {
					continue
				}
				obj := -gp * gp / quad
				if firstOrder {
					obj = -gp
				}
				if obj <= objMin && gd > 0 {
					objMin, jSel = obj, t
					if !firstOrder {
						thr = -objMin * thrShrink
					}
				}
			}
		} else if iSel >= 0 {
			ki := g.row(iSel)
			gmax2, jSel = jPassGo(yg, lowSel, qd, ki, ki[iSel], gmax, p.firstOrder)
		}
		converged := iSel < 0 || jSel < 0 || gmax+gmax2 < eps
		if reopened {
			reopened = false
			if !converged && p.onShrink != nil {
				p.onShrink(n, true)
			}
		}
		if converged {
			if p.Shrinking && len(act) < n {
				// Converged on the active variables: put the
				// shrunk ones back, search i over all of them, and
				// redo this iteration's j pass over all; shrink
				// again after the next step.
				unshrink()
				gmax, iSel = negInf, -1
				for t := 0; t < n; t++ {
					if v := upPen[t] - yg[t]; v >= gmax && upPen[t] == 0 {
						gmax, iSel = v, t
					}
				}
				// (2: the re-run of this iteration, which
				// decrements it too, must not shrink.)
				shrinkIn, reopened = 2, true
				iter--
				continue
			}
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
		// −grad_i − grad_j and grad_i − grad_j of the textbook step, in
		// yg: the same floats (y_i, y_j = ±1).
		if ys[i] != ys[j] {
			delta := (-ys[i]*yg[i] + ys[i]*yg[j]) / quad
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
			delta := (ys[i]*yg[i] - ys[j]*yg[j]) / quad
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
		// A step that leaves both alphas below their bounds is the step
		// any larger bounds would take: the clips above only move an
		// alpha onto a bound, and a skipped check of a lower clip
		// (sum > Ci) would have found an alpha above Ci instead.
		atUpper = atUpper || alpha[i] >= Ci || alpha[j] >= Cj
		member(i)
		member(j)
		// yg_t += K_ti Δa_i y_i + K_tj Δa_j y_j (grad_t += Q_ti Δa_i +
		// Q_tj Δa_j with Q_ti = y_t y_i K_ti), and the next i from the
		// updated gradient.
		di, dj := (alpha[i]-oldI)*ys[i], (alpha[j]-oldJ)*ys[j]
		ki, kj, yg, upSel := ki[:n], kj[:n], yg[:n], upSel[:n]
		// upSel[t] is 0 or −∞, so a non-member's v is −∞ and never
		// reaches the finite start, and every member's finite v does:
		// the same choice as testing membership, one branch less.
		if vec {
			gmax, iSel = updateSelectVec(yg, ki, kj, upSel, di, dj)
		} else {
			gmax, iSel = updateSelect(yg, ki, kj, upSel, di, dj)
		}
		if iSel < 0 {
			gmax = negInf
		}
	}

	// Bias: the mean of y_t ∇_t over free variables, which KKT makes equal;
	// without free variables, the middle of the feasible interval.
	ub, lb := math.Inf(1), math.Inf(-1)
	var sumFree float64
	nFree := 0
	for t := 0; t < n; t++ {
		yg := yg[t]
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
	sol.BoundFree = !atUpper
	return sol, nil
}

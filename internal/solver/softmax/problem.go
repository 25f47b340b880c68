package softmax

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/mimlstream/mimlstream/internal/mil"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// chunkRows is the number of instances per unit of parallel work. It is a
// constant, not a function of the worker count, and partial sums are reduced
// in chunk order: the objective and gradient are bitwise identical whatever
// the number of workers.
const chunkRows = 128

// Problem is a soft-label maximum-likelihood problem
//
//	f(W) = (1/N) Σ_i Σ_c T[i,c] log p(c|x_i, W) − (L2/2) Σ_c ‖w_c‖²
//
// (the bias is not penalised). With one-hot targets it is ordinary
// multinomial logistic regression (Pham et al. eq. 7); with the E-step
// posteriors as targets it is the EM surrogate g(w, w^(k)) of eq. 10.
// A Problem is not safe for concurrent use: it owns scratch space. X (SX)
// must not change once the Problem has been evaluated (the logits of the
// last evaluation are kept, see CachedLogits, and a sparse problem's
// gradient layout is built from the rows' indices).
type Problem struct {
	Classes, Dim int
	N            int
	// X is N × (Dim+1) row-major, the last column all ones.
	X []float64
	// SX holds the instances instead of X (nil) for a sparse problem
	// (NewSparseProblem); the bias column is implicit.
	SX []mil.SparseVec
	// T is N × Classes row-major, the targets; callers may rewrite it
	// between evaluations (the EM loop does, once per E-step).
	T       []float64
	L2      float64
	Workers int

	partVal  []float64
	partGrad [][]float64
	scratch  [][]float64
	// A sparse problem's chunk j keeps its gradient over the features its
	// rows touch, feats[j] (ascending), not over all Dim: partGrad[j] is
	// Classes × (len(feats[j])+1), the bias last, so the M-step's memory
	// is proportional to the non-zeros (a text set's Dim is ~66,000, the
	// chunks of TREC9 touch ~700 features each). local[i][q] is the
	// position of SX[i].Idx[q] in its chunk's feats. Built on the first
	// evaluation.
	feats [][]int32
	local [][]int32
	// logits holds X·Wᵀ (N × Classes) of the last evaluation, at logitsW
	// when logitsOK. They do not depend on the targets, so the first
	// evaluation of an M-step (same weights, new targets) and the E-step
	// before it skip the product.
	logits   []float64
	logitsW  []float64
	logitsOK bool
}

// CachedLogits returns X·Wᵀ (N × Classes, row-major) when the last
// evaluation was at w, nil otherwise. The slice is the Problem's: read it
// before the next evaluation, and do not modify it.
func (p *Problem) CachedLogits(w []float64) []float64 {
	if p.logitsOK && slices.Equal(p.logitsW, w) {
		return p.logits
	}
	return nil
}

// NewProblem copies the instances into an augmented design matrix. targets
// may be nil (to be filled later through T); otherwise it is N × classes.
func NewProblem(classes, dim int, x [][]float64, targets [][]float64, l2 float64, workers int) (*Problem, error) {
	if err := checkSettings(classes, l2); err != nil {
		return nil, err
	}
	n := len(x)
	p := &Problem{Classes: classes, Dim: dim, N: n, L2: l2, Workers: workers,
		X: make([]float64, n*(dim+1)), T: make([]float64, n*classes)}
	for i, row := range x {
		if len(row) != dim {
			return nil, fmt.Errorf("softmax: instance %d has %d features, want %d", i, len(row), dim)
		}
		copy(p.X[i*(dim+1):], row)
		p.X[i*(dim+1)+dim] = 1
	}
	if err := p.setTargets(targets); err != nil {
		return nil, err
	}
	return p, nil
}

// checkSettings refuses a problem without classes or with a negative L2.
func checkSettings(classes int, l2 float64) error {
	if classes <= 0 {
		return errors.New("softmax: no classes")
	}
	if l2 < 0 || math.IsNaN(l2) {
		return fmt.Errorf("softmax: l2 must be >= 0, got %v", l2)
	}
	return nil
}

// setTargets copies targets (nil: none yet) into T, N rows of Classes.
func (p *Problem) setTargets(targets [][]float64) error {
	if targets == nil {
		return nil
	}
	if len(targets) != p.N {
		return fmt.Errorf("softmax: %d target rows for %d instances", len(targets), p.N)
	}
	for i, t := range targets {
		if len(t) != p.Classes {
			return fmt.Errorf("softmax: target row %d has %d classes, want %d", i, len(t), p.Classes)
		}
		copy(p.T[i*p.Classes:], t)
	}
	return nil
}

func (p *Problem) nParams() int { return p.Classes * (p.Dim + 1) }

func (p *Problem) workers() int {
	if p.Workers > 0 {
		return p.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// Evaluate returns f(w) and, when grad is non-nil, writes ∇f(w) into it.
func (p *Problem) Evaluate(w, grad []float64) float64 {
	np := p.nParams()
	if len(w) != np || (grad != nil && len(grad) != np) {
		panic(fmt.Sprintf("softmax: parameter vector of %d, want %d", len(w), np))
	}
	if p.N == 0 {
		clear(grad)
		return p.penalty(w, grad)
	}
	nChunks := (p.N + chunkRows - 1) / chunkRows
	if len(p.partVal) != nChunks {
		p.partVal = make([]float64, nChunks)
		p.partGrad = make([][]float64, nChunks)
		if p.SX != nil {
			p.sparseLayout(nChunks)
		}
		for i := range p.partGrad {
			if p.SX != nil {
				p.partGrad[i] = make([]float64, p.Classes*(len(p.feats[i])+1))
			} else {
				p.partGrad[i] = make([]float64, np)
			}
		}
	}
	nw := min(p.workers(), nChunks)
	if len(p.scratch) < nw {
		p.scratch = make([][]float64, nw)
		for i := range p.scratch {
			p.scratch[i] = make([]float64, 2*chunkRows*p.Classes)
		}
	}
	cached := p.CachedLogits(w) != nil
	if !cached {
		p.logitsOK = false
		if len(p.logits) != p.N*p.Classes {
			p.logits = make([]float64, p.N*p.Classes)
		}
	}
	wm := mat.NewDense(p.Classes, p.Dim+1, w)
	var wg sync.WaitGroup
	for k := 0; k < nw; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			for j := k; j < nChunks; j += nw {
				var g []float64
				if grad != nil {
					g = p.partGrad[j]
				}
				p.partVal[j] = p.chunk(j, wm, g, p.scratch[k], cached)
			}
		}(k)
	}
	wg.Wait()
	if !cached {
		p.logitsW = append(p.logitsW[:0], w...)
		p.logitsOK = true
	}
	val := 0.0
	for j := range nChunks {
		val += p.partVal[j]
	}
	inv := 1 / float64(p.N)
	val *= inv
	if grad != nil {
		if p.SX != nil {
			p.reduceSparse(grad)
		} else {
			copy(grad, p.partGrad[0])
			for j := 1; j < nChunks; j++ {
				floats.Add(grad, p.partGrad[j])
			}
		}
		floats.Scale(inv, grad)
	}
	return val + p.penalty(w, grad)
}

// penalty returns −(L2/2)‖W‖² (bias excluded) and adds its gradient.
func (p *Problem) penalty(w, grad []float64) float64 {
	if p.L2 == 0 {
		return 0
	}
	d := p.Dim
	s := 0.0
	for c := 0; c < p.Classes; c++ {
		row := w[c*(d+1) : c*(d+1)+d]
		for j, v := range row {
			s += v * v
			if grad != nil {
				grad[c*(d+1)+j] -= p.L2 * v
			}
		}
	}
	return -0.5 * p.L2 * s
}

// chunk computes the unnormalised log-likelihood of chunk j and, when g is
// non-nil, its gradient (T − P)ᵀ X. The chunk's logits are computed into
// p.logits unless cached (then they are already there, for these weights).
func (p *Problem) chunk(j int, wm *mat.Dense, g []float64, scratch []float64, cached bool) float64 {
	if p.SX != nil {
		return p.chunkSparse(j, wm.RawMatrix().Data, g, scratch, cached)
	}
	lo := j * chunkRows
	hi := min(p.N, lo+chunkRows)
	rows := hi - lo
	d1 := p.Dim + 1
	c := p.Classes
	xc := mat.NewDense(rows, d1, p.X[lo*d1:hi*d1])
	logits := p.logits[lo*c : hi*c]
	if !cached {
		mat.NewDense(rows, c, logits).Mul(xc, wm.T())
	}
	z := mat.NewDense(rows, c, scratch[:rows*c])
	t := p.T[lo*c : hi*c]
	val := 0.0
	for r := 0; r < rows; r++ {
		lr := logits[r*c : (r+1)*c]
		zr := z.RawRowView(r)
		val = addRowObjective(val, lr, t[r*c:(r+1)*c], zr, g != nil)
	}
	if g != nil {
		gm := mat.NewDense(c, d1, g)
		gm.Mul(z.T(), xc)
	}
	return val
}

// AscendResult reports what Ascend did.
type AscendResult struct {
	Steps       int
	Evaluations int     // objective evaluations, with or without the gradient
	Value       float64 // objective at the returned parameters
	Start       float64 // objective at the initial parameters
	StepSize    float64 // last accepted step size, a good start for the next call
	Converged   bool
}

// Ascend runs up to maxSteps iterations of gradient ascent on f from w
// (updated in place), choosing each step by backtracking line search (Boyd &
// Vandenberghe §9.2: accept t when f(w+t∇f) ≥ f(w) + αt‖∇f‖², else t ← βt).
// It stops early when the relative improvement of a step falls below tol.
// Every accepted step increases f, which is what the generalized EM needs.
// step is the initial trial step size (≤ 0 picks one).
func (p *Problem) Ascend(ctx context.Context, w []float64, maxSteps int, tol, step float64) (AscendResult, error) {
	const (
		alpha = 1e-4
		beta  = 0.5
	)
	np := p.nParams()
	grad := make([]float64, np)
	trial := make([]float64, np)
	trialGrad := make([]float64, np)
	f := p.Evaluate(w, grad)
	res := AscendResult{Start: f, Value: f, Evaluations: 1}
	if step <= 0 {
		step = 1
	}
	for s := 0; s < maxSteps; s++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		gg := floats.Dot(grad, grad)
		if gg == 0 || math.IsNaN(gg) {
			res.Converged = true
			break
		}
		// Try a larger step than last time first: the curvature changes
		// slowly from one EM iteration to the next.
		t := step * 2
		var ft float64
		accepted := false
		// Each trial computes the gradient too: the accepted one then needs
		// no second pass, and the value is the same with or without it.
		for range 60 {
			floats.AddScaledTo(trial, w, t, grad)
			ft = p.Evaluate(trial, trialGrad)
			res.Evaluations++
			if ft >= f+alpha*t*gg {
				accepted = true
				break
			}
			t *= beta
		}
		if !accepted {
			res.Converged = true
			break
		}
		copy(w, trial)
		grad, trialGrad = trialGrad, grad
		step = t
		prev := f
		f = ft
		res.Steps++
		res.Value = f
		res.StepSize = step
		if f-prev <= tol*math.Max(1, math.Abs(prev)) {
			res.Converged = true
			break
		}
	}
	res.StepSize = step
	return res, nil
}

// MaximizeLBFGS maximizes f from w (updated in place) with limited-memory
// BFGS (Nocedal & Wright, Algorithm 7.4, memory 10) and a backtracking
// Armijo line search, for problems solved to convergence (the supervised
// baseline). It stops when the largest gradient component is below gradTol,
// when an iteration no longer improves f, or after maxIter iterations.
func (p *Problem) MaximizeLBFGS(ctx context.Context, w []float64, maxIter int, gradTol float64) (float64, error) {
	var o LBFGS
	res, err := o.Maximize(ctx, p, w, maxIter, gradTol, 1e-14)
	return res.Value, err
}

// lbfgsMemory is the number of curvature pairs L-BFGS keeps.
const lbfgsMemory = 10

// LBFGS maximizes Problems with limited-memory BFGS (Nocedal & Wright,
// Algorithm 7.4, memory 10) and a backtracking Armijo line search. It keeps
// its curvature pairs from one Maximize call to the next, which is what an
// EM loop wants: the Hessian of the soft-label log-likelihood,
// −(1/N) Σ_i (Σ_c t_ic)(diag p_i − p_i p_iᵀ) ⊗ x_i x_iᵀ, does not depend on
// the targets when each row of targets sums to one (E-step posteriors do),
// so the pairs gathered in one M-step describe the next one's objective
// near the same weights, and its first step is a quasi-Newton step rather
// than a short steepest-ascent one. The zero value is ready to use; an
// LBFGS is not safe for concurrent use and serves one parameter size.
type LBFGS struct {
	s, y          [][]float64 // ring of curvature pairs, oldest first
	rho           []float64
	g, dir, trial []float64 // buffers, reused across calls
	gNew, alpha   []float64
	spareS        []float64 // the next pair is built here
	spareY        []float64
}

// LBFGSResult reports what Maximize did.
type LBFGSResult struct {
	Iterations  int
	Evaluations int
	Start       float64 // f at the initial parameters
	Value       float64 // f at the returned parameters
	// Converged is true when a stopping test (gradient or relative gain)
	// fired before maxIter.
	Converged bool
}

// Reset forgets the curvature pairs.
func (o *LBFGS) Reset() { o.s, o.y, o.rho = o.s[:0], o.y[:0], o.rho[:0] }

func (o *LBFGS) buffers(n int) {
	if len(o.g) == n {
		return
	}
	o.s, o.y, o.rho = nil, nil, nil
	o.g, o.dir, o.trial, o.gNew = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	o.alpha = make([]float64, lbfgsMemory)
}

// Maximize maximizes f from w (updated in place). It stops when the largest
// gradient component is below gradTol, when an iteration raises f by no more
// than relTol·max(1, |f|), when the line search fails, or after maxIter
// iterations. Every accepted step increases f (a generalized EM step).
func (o *LBFGS) Maximize(ctx context.Context, p *Problem, w []float64, maxIter int, gradTol, relTol float64) (LBFGSResult, error) {
	const armijo = 1e-4
	np := p.nParams()
	o.buffers(np)
	g, dir, trial, gNew, a := o.g, o.dir, o.trial, o.gNew, o.alpha
	// Minimise −f: g is the gradient of −f.
	f := -p.Evaluate(w, g)
	floats.Scale(-1, g)
	res := LBFGSResult{Evaluations: 1, Start: -f, Value: -f}
	for it := 0; it < maxIter; it++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if floats.Norm(g, math.Inf(1)) < gradTol {
			res.Converged = true
			break
		}
		// Two-loop recursion: dir = −H·g.
		copy(dir, g)
		m := len(o.s)
		for k := m - 1; k >= 0; k-- {
			a[k] = o.rho[k] * floats.Dot(o.s[k], dir)
			floats.AddScaled(dir, -a[k], o.y[k])
		}
		if k := m - 1; k >= 0 {
			floats.Scale(floats.Dot(o.s[k], o.y[k])/floats.Dot(o.y[k], o.y[k]), dir)
		}
		for k := 0; k < m; k++ {
			b := o.rho[k] * floats.Dot(o.y[k], dir)
			floats.AddScaled(dir, a[k]-b, o.s[k])
		}
		floats.Scale(-1, dir)
		slope := floats.Dot(g, dir)
		if slope >= 0 { // not a descent direction: restart from steepest descent
			o.Reset()
			floats.ScaleTo(dir, -1, g)
			slope = floats.Dot(g, dir)
		}
		t := 1.0
		if len(o.s) == 0 {
			t = 1 / math.Max(1, floats.Norm(g, 2))
		}
		var fNew float64
		ok := false
		for range 50 {
			floats.AddScaledTo(trial, w, t, dir)
			fNew = -p.Evaluate(trial, gNew)
			res.Evaluations++
			if fNew <= f+armijo*t*slope {
				ok = true
				break
			}
			t /= 2
		}
		if !ok {
			res.Converged = true
			break
		}
		floats.Scale(-1, gNew)
		o.push(w, trial, g, gNew)
		copy(w, trial)
		copy(g, gNew)
		improved := f - fNew
		f = fNew
		res.Iterations++
		res.Value = -f
		if improved <= relTol*math.Max(1, math.Abs(f)) {
			res.Converged = true
			break
		}
	}
	return res, nil
}

// push records the pair s = w1 − w0, y = g1 − g0 when it has positive
// curvature, dropping the oldest pair when the memory is full. The pair is
// built in spare slices, which the dropped pair's slices then replace.
func (o *LBFGS) push(w0, w1, g0, g1 []float64) {
	if len(o.spareS) != len(w0) {
		o.spareS, o.spareY = make([]float64, len(w0)), make([]float64, len(w0))
	}
	s, y := o.spareS, o.spareY
	floats.SubTo(s, w1, w0)
	floats.SubTo(y, g1, g0)
	sy := floats.Dot(s, y)
	if !(sy > 1e-12*floats.Norm(s, 2)*floats.Norm(y, 2)) {
		return
	}
	o.spareS, o.spareY = nil, nil
	if len(o.s) == lbfgsMemory {
		o.spareS, o.spareY = o.s[0], o.y[0]
		copy(o.s, o.s[1:])
		copy(o.y, o.y[1:])
		copy(o.rho, o.rho[1:])
		o.s, o.y, o.rho = o.s[:lbfgsMemory-1], o.y[:lbfgsMemory-1], o.rho[:lbfgsMemory-1]
	}
	o.s = append(o.s, s)
	o.y = append(o.y, y)
	o.rho = append(o.rho, 1/sy)
}

// addRowObjective adds to val one instance's term Σ_c t_c log p_c of the
// objective, from its logits lr and soft targets tr, in the order the sum
// always used (so results stay bit for bit); with grad it leaves T − P·ΣT in
// zr, the row's factor of the gradient (Σ_c (t_c − p_c ΣT) x). Dense and
// sparse problems share it.
func addRowObjective(val float64, lr, tr, zr []float64, grad bool) float64 {
	tsum := 0.0
	mx := math.Inf(-1)
	for k, tv := range tr {
		if tv != 0 {
			val += tv * lr[k]
			tsum += tv
		}
		mx = max(mx, lr[k])
	}
	// One exponential per class serves both log Σ exp z and, for the
	// gradient, the probabilities (exp dominates the cost here).
	s := 0.0
	for k, v := range lr {
		e := math.Exp(v - mx)
		zr[k] = e
		s += e
	}
	val -= tsum * (mx + math.Log(s))
	if grad {
		inv := tsum / s
		for k := range zr {
			zr[k] = tr[k] - inv*zr[k]
		}
	}
	return val
}

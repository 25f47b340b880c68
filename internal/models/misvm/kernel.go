package misvm

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
	"github.com/mimlstream/mimlstream/internal/solver/svm"
	"gonum.org/v1/gonum/floats"
)

// Kernel names (param kernel).
const (
	KernelAuto   = "auto"
	KernelLinear = "linear"
	KernelRBF    = "rbf"
	KernelPoly   = "poly"
)

// kernelData is the kernel matrix of every training instance of one fit,
// shared by every class, restart and relabeling round: a round's SVM works
// on a sub-matrix of it, and scoring a training instance is a row lookup.
type kernelData struct {
	cfg    Config
	rows   [][]float64
	srows  []mil.SparseVec // instead of rows for sparse data
	gram   *svm.Gram
	gamma  float64
	scorer ovr.Scorer // kernel fields only (no SV, Beta, B)
	// subBuf, when set, is the sub-matrix buffer of every learner on
	// this kernel instead of one each (the inner CV, whose fits on a
	// kernel run one after another).
	subBuf *[]float64
}

// GammaScale is the width rule used when param gamma is 0 (the default):
// γ = 1 / (d · Var), with Var the variance of all entries of the scaled
// training instances — scikit-learn's gamma="scale". After the default
// z-scores Var = 1 and γ = 1/d, so the kernel's exponent is about −2 on
// average between two instances (E‖x − z‖² = 2d): neither the near-identity
// Gram of a narrow kernel nor the near-constant one of a wide kernel.
func GammaScale(rows [][]float64) float64 {
	var n, sum, sq float64
	d := 0
	for _, r := range rows {
		d = len(r)
		for _, v := range r {
			n++
			sum += v
			sq += v * v
		}
	}
	if n == 0 || d == 0 {
		return 1
	}
	mean := sum / n
	v := sq/n - mean*mean
	if !(v > 0) {
		return 1
	}
	return 1 / (float64(d) * v)
}

func newKernelData(cfg Config, rows [][]float64) (*kernelData, error) {
	if err := checkGramLimit(cfg, len(rows)); err != nil {
		return nil, err
	}
	m := pairBase(cfg, rows)
	return newKernelDataFrom(cfg, rows, m, m)
}

// newKernelDataFrom is newKernelData from the rows' pairBase matrix, whose
// kernel values it writes to dst (which may be base itself).
func newKernelDataFrom(cfg Config, rows [][]float64, base, dst []float64) (*kernelData, error) {
	gamma := cfg.Gamma
	if gamma == 0 {
		gamma = GammaScale(rows)
	}
	k := &kernelData{cfg: cfg, rows: rows, gamma: gamma}
	k.scorer = ovr.Scorer{Gamma: gamma}
	if cfg.Kernel == KernelPoly {
		k.scorer.Kernel, k.scorer.Degree, k.scorer.Coef0 = ovr.KernelPoly, cfg.Degree, cfg.Coef0
	}
	// base is symmetric: map the upper triangle and mirror it (half the
	// exponentials).
	n := len(rows)
	for i := range n {
		row := dst[i*n+i : i*n+n]
		if cfg.Kernel == KernelPoly {
			for j, v := range base[i*n+i : i*n+n] {
				row[j] = k.kernel(v)
			}
		} else {
			// math.Exp(−γ·v), four at a time (the same floats as
			// kernel's).
			ovr.ExpScaled(row, base[i*n+i:i*n+n], -gamma)
		}
		for j, v := range row[1:] {
			dst[(i+1+j)*n+i] = v
		}
	}
	return k, k.setGram(n, dst)
}

// pairBase returns, row-major over every pair of rows, the part of the
// kernel that does not depend on gamma: ‖a − b‖² for rbf, ⟨a, b⟩ for
// poly. The inner cross-validation of select=cv computes it once per fold
// and maps it to the kernel matrix of each gamma (newKernelDataFrom),
// where every candidate used to compute its own kernel matrix; the entries
// are the same floats either way.
func pairBase(cfg Config, rows [][]float64) []float64 {
	return pairBaseInto(cfg, rows, nil)
}

// pairBaseInto is pairBase writing into buf when it has the capacity.
func pairBaseInto(cfg Config, rows [][]float64, buf []float64) []float64 {
	n := len(rows)
	m := grow(buf, n*n)
	if n == 0 {
		return m
	}
	// Row i against the blocks of four from the one holding row i
	// (ovr.Blocks: AVX2 where the CPU has it, each entry the float of the
	// one-at-a-time sum, TestPairBaseMatchesBase); the entries left of the
	// diagonal in the first block are not written: the mirror of the rows
	// before writes them.
	bl := ovr.NewBlocks(rows, len(rows[0]))
	out := make([]float64, 4*bl.NumBlocks())
	poly := cfg.Kernel == KernelPoly
	for i := range n {
		b0 := i / 4
		bl.BaseRow(poly, rows[i], b0, -1, out)
		for j, v := range out[i-4*b0 : n-4*b0] {
			m[i*n+i+j], m[(i+j)*n+i] = v, v
		}
	}
	return m
}

// grow returns buf resliced to n entries, or a new slice when buf is too
// short. The entries are not zeroed: every caller writes all of them.
func grow(buf []float64, n int) []float64 {
	if cap(buf) < n {
		return make([]float64, n)
	}
	return buf[:n]
}

// kernel is the kernel value for the base value v (see pairBase): the formula
// ovr.Scorer applies at annotation time (TestKernelScoresMatchServedModel
// holds them together).
func (k *kernelData) kernel(v float64) float64 {
	if k.cfg.Kernel == KernelPoly {
		return math.Pow(k.gamma*v+k.cfg.Coef0, float64(k.cfg.Degree))
	}
	return math.Exp(-k.gamma * v)
}

func checkGramLimit(cfg Config, n int) error {
	if n > cfg.GramLimit {
		return fmt.Errorf("misvm: kernel=%s on %d training instances exceeds gram_limit=%d (the kernel matrix needs %d MB)",
			cfg.Kernel, n, cfg.GramLimit, n*n*8>>20)
	}
	return nil
}

func (k *kernelData) setGram(n int, m []float64) error {
	var err error
	k.gram, err = svm.NewGram(n, m)
	return err
}

// kernelLearner trains each round's SVM in the dual by SMO (package svm) on
// the kernel sub-matrix of the round's examples. The boxes are class
// balanced like the linear objective's weights: a positive example's dual
// variable is bounded by C/(2N⁺), a negative one's by C/(2N⁻), so that
// both objectives are ½‖w‖² + C/(2N⁺) Σ_pos hinge + C/(2N⁻) Σ_neg hinge and
// the same C means the same trade-off for every kernel.
type kernelLearner struct {
	k *kernelData
	// noObjective skips the primal objective (train returns 0), which
	// only ranks restarts: with one restart it is never read, and it
	// cost mi-SVM a score of every training example per round.
	noObjective bool
	// warm starts each round's SMO from the previous round's alphas
	// (same example slot, same label; see warmStart) instead of 0.
	warm bool
	// shrink runs each round's SMO with shrinking (svm.Params.Shrinking),
	// the same optimum to the tolerance, not the same floats; set with
	// warm (the inner cross-validation).
	shrink    bool
	prevAlpha []float64
	prevPos   []bool
	// rounds counts the rounds trained.
	rounds int
	// scoreAll computes every row's score after each round (one AXPY
	// per support vector) instead of each row's on request: set where
	// the rounds score most rows (see fitClasses). all holds them.
	scoreAll bool
	all      []float64
	// boundFree: no alpha of any round's SMO reached its box
	// (svm.Solution.BoundFree), so a larger C trains the same SVMs.
	boundFree bool
	// sub holds the kernel sub-matrix of the last round whose examples
	// were not all training rows in order (MI-SVM), reused by the next.
	sub []float64
	// The last round's SVM: f(x) = Σ_a coef_a K(x_rows[a], x) + b.
	rows []int
	coef []float64
	b    float64
}

func (l *kernelLearner) train(ctx context.Context, ex []example) (func(int) float64, float64, error) {
	l.rounds++
	if l.rounds == 1 {
		l.boundFree = true
	}
	idx := make([]int, len(ex))
	y := make([]bool, len(ex))
	np := 0
	for a, e := range ex {
		idx[a], y[a] = e.row, e.pos
		if e.pos {
			np++
		}
	}
	nn := len(ex) - np
	if np == 0 || nn == 0 {
		return nil, 0, fmt.Errorf("misvm: a relabeling round has %d positive and %d negative examples", np, nn)
	}
	bound := make([]float64, len(ex))
	for a := range ex {
		if y[a] {
			bound[a] = l.k.cfg.C / float64(2*np)
		} else {
			bound[a] = l.k.cfg.C / float64(2*nn)
		}
	}
	var alpha0 []float64
	if l.warm {
		alpha0 = l.warmStart(y, bound)
	}
	sub := &l.sub
	if l.k.subBuf != nil {
		sub = l.k.subBuf
	}
	g := l.k.gram.SubInto(idx, *sub)
	if g != l.k.gram {
		*sub = g.Data()
	}
	sol, err := svm.SolveBoundedFrom(ctx, g, y, bound, alpha0, svm.Params{Tol: l.k.cfg.Tol, Shrinking: l.shrink})
	if err != nil {
		return nil, 0, fmt.Errorf("misvm: %w", err)
	}
	l.boundFree = l.boundFree && sol.BoundFree
	if l.warm {
		l.prevAlpha, l.prevPos = sol.Alpha, y
	}
	l.rows, l.coef, l.b = l.rows[:0], l.coef[:0], sol.Bias
	for a, al := range sol.Alpha {
		if al > 0 {
			c := al
			if !y[a] {
				c = -al
			}
			l.rows = append(l.rows, idx[a])
			l.coef = append(l.coef, c)
		}
	}
	if l.scoreAll {
		// Every row's score at once, Σ over the support vectors in
		// their order of coef·K(x_r, ·), one AXPY per support vector
		// along its row of K (gonum's: a product and a sum rounded
		// separately): K is symmetric, so each row's sum is the one the
		// closure below makes, float for float (TestScoreAllMatchesRows).
		n := l.k.gram.Len()
		l.all = slices.Grow(l.all[:0], n)[:n]
		for t := range l.all {
			l.all[t] = l.b
		}
		for u, r := range l.rows {
			floats.AddScaled(l.all, l.coef[u], l.k.gram.Row(r))
		}
		all := l.all
		score := func(row int) float64 { return all[row] }
		return score, l.objective(ex, sol, bound, score), nil
	}
	score := func(row int) float64 {
		// K is symmetric (both kernel matrices store each pair's value
		// twice), so row's own row holds K(x_r, x_row) contiguously.
		k := l.k.gram.Row(row)
		f := l.b
		for u, r := range l.rows {
			f += l.coef[u] * k[r]
		}
		return f
	}
	return score, l.objective(ex, sol, bound, score), nil
}

// objective is the round's primal objective ½‖w‖² + Σ_a bound_a·hinge_a
// at w = Σ coef_u φ(x_u), from the round's scores, or 0 with noObjective
// (only restarts read it).
func (l *kernelLearner) objective(ex []example, sol svm.Solution, bound []float64, score func(int) float64) float64 {
	if l.noObjective {
		return 0
	}
	var quad, loss float64
	for a, e := range ex {
		f := score(e.row)
		if sol.Alpha[a] > 0 {
			quad += sol.Alpha[a] * (f - l.b) * sign(e.pos)
		}
		loss += bound[a] * math.Max(0, 1-sign(e.pos)*f)
	}
	return quad/2 + loss
}

func sign(b bool) float64 {
	if b {
		return 1
	}
	return -1
}

// scorer returns the last round's SVM as a served scorer.
func (l *kernelLearner) scorer() ovr.Scorer {
	sc := l.k.scorer
	sc.Beta = make([]float64, len(l.rows))
	if l.k.srows != nil {
		sc.SparseSV = make([]mil.SparseVec, len(l.rows))
	} else {
		sc.SV = make([][]float64, len(l.rows))
	}
	for u, r := range l.rows {
		if l.k.srows != nil {
			sc.SparseSV[u] = l.k.srows[r].Clone()
		} else {
			sc.SV[u] = append([]float64(nil), l.k.rows[r]...)
		}
		sc.Beta[u] = l.coef[u]
	}
	sc.B = l.b
	return sc
}

// warmStart returns a feasible starting point for this round's SMO from
// the previous round's solution, or nil (start from 0) in the first
// round. The rounds of one fit list their examples in the same slots
// (negative instances, then per positive bag its witness for MI-SVM or
// its instances for mi-SVM), so slot a keeps its alpha when its label did
// not change, clipped to the new box (mi-SVM's boxes move with N⁺); the
// other slots start at 0, and the surplus of Σ y·alpha is taken off the
// side that has it, in slot order.
func (l *kernelLearner) warmStart(y []bool, bound []float64) []float64 {
	if len(l.prevAlpha) != len(y) {
		return nil
	}
	alpha := make([]float64, len(y))
	var sum float64
	changed := false
	for a := range y {
		if y[a] == l.prevPos[a] {
			alpha[a] = min(l.prevAlpha[a], bound[a])
		}
		changed = changed || alpha[a] != l.prevAlpha[a]
		sum += sign(y[a]) * alpha[a]
	}
	if !changed {
		// The previous solution as it is: its Σ y·alpha is 0 up to the
		// rounding SMO's pair steps leave, which the fix-up below would
		// only spread onto the first slots.
		return alpha
	}
	for a := range y {
		switch {
		case sum > 0 && y[a]:
			d := min(alpha[a], sum)
			alpha[a] -= d
			sum -= d
		case sum < 0 && !y[a]:
			d := min(alpha[a], -sum)
			alpha[a] -= d
			sum += d
		}
	}
	return alpha
}

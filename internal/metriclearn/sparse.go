package metriclearn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// ErrNeedsRidge refuses the closed form on sparse rows without a ridge:
// passages have far more features than there are passages, where the
// pseudo-inverse of the paper interpolates the training rows (every one
// mapped exactly onto its class) and conjugate gradients would not
// converge to it.
var ErrNeedsRidge = errors.New("mlca: the closed form on sparse instances needs ridge > 0")

// Conjugate-gradient limits of TrainSparse: the relative residual it stops
// at, and the iterations it allows before reporting that it did not get
// there. With λ = ridge × the mean squared row norm, the system's condition
// number is at most 1 + ‖X‖²/λ: a few hundred on text_dev at ridge 1, where
// it converges in under 200 iterations.
const (
	cgTolerance = 1e-8
	cgMaxIters  = 2000
)

// TrainSparse is the closed form of TrainRidge on sparse rows, without
// densifying them: L = (X_cᵀX_c + λI)⁻¹ X_cᵀ J for the rows sel of xs
// (labels[i] the class of row sel[i]), X_c the rows centred by the mean of
// every row of xs when center is set (the mean of FeatureMap.Center), and
// λ = ridge × the mean squared norm of a centred selected row. Each of the
// k columns is solved by conjugate gradients, whose products with X_c cost
// O(nnz) each: linear in the number of passages, as the paper's algorithm
// is, where the primal solve costs O(d³) in the seen features and the dual
// O(n³) in the passages.
//
// The result is the linear Projection g(x) = Lᵀ(x − μ) over the input
// dimension dim, its map stored only for the features some row of xs has
// (Projection.Rows): L is zero elsewhere.
func TrainSparse(ctx context.Context, xs []mil.SparseVec, sel, labels []int, k, dim int, ridge float64, center bool) (Projection, error) {
	if len(sel) != len(labels) {
		return Projection{}, fmt.Errorf("mlca: %d rows but %d labels", len(sel), len(labels))
	}
	if len(sel) == 0 {
		return Projection{}, ErrNoData
	}
	if !(ridge > 0) {
		return Projection{}, ErrNeedsRidge
	}
	// Compress the columns to the features seen in xs.
	rows, col := mil.SeenFeatures(xs)
	m := len(rows)
	mu := make([]float64, m)
	if center {
		for _, x := range xs {
			for i, j := range x.Idx {
				if x.Val[i] != 0 {
					mu[col[j]] += x.Val[i]
				}
			}
		}
		for c := range mu {
			mu[c] /= float64(len(xs))
		}
	}
	a := sparseRows{cols: make([][]int, len(sel)), vals: make([][]float64, len(sel)), mu: mu}
	q := make([]int, k)
	for r, j := range sel {
		x := xs[j]
		// Explicit zeros (not seen) are left out, as by SeenFeatures.
		for i, f := range x.Idx {
			if x.Val[i] != 0 {
				a.cols[r] = append(a.cols[r], col[f])
				a.vals[r] = append(a.vals[r], x.Val[i])
			}
		}
		if l := labels[r]; l < 0 || l >= k {
			return Projection{}, fmt.Errorf("mlca: label %d of row %d outside 0..%d", l, r, k-1)
		}
		q[labels[r]]++
	}
	// λ from the mean squared norm of a centred row: ‖x−μ‖² = ‖x‖² − 2xᵀμ + ‖μ‖².
	mm := dotDense(mu, mu)
	tr := 0.0
	for r := range a.cols {
		for i, c := range a.cols[r] {
			v := a.vals[r][i]
			tr += v*v - 2*v*mu[c]
		}
		tr += mm
	}
	lambda := ridge * tr / float64(len(sel))
	if !(lambda > 0) {
		return Projection{}, fmt.Errorf("%w: the selected rows are all equal to their mean", ErrNoData)
	}
	p := Projection{Kernel: KernelLinear, InDim: dim, OutDim: k, Rows: rows, Map: make([][]float64, m)}
	for c := range p.Map {
		p.Map[c] = make([]float64, k)
	}
	u := make([]float64, len(sel))
	for cl := 0; cl < k; cl++ {
		if q[cl] == 0 {
			continue // a class with no row keeps a zero column (see Train)
		}
		if err := ctx.Err(); err != nil {
			return Projection{}, err
		}
		// b = X_cᵀ j_c.
		for r, l := range labels {
			u[r] = 0
			if l == cl {
				u[r] = 1 / math.Sqrt(float64(q[cl]))
			}
		}
		b := make([]float64, m)
		a.tmul(u, b)
		w, err := a.solve(b, lambda, u)
		if err != nil {
			return Projection{}, fmt.Errorf("class %d: %w", cl, err)
		}
		for c, v := range w {
			p.Map[c][cl] = v
		}
	}
	if center {
		p.Offset = make([]float64, k)
		for c, v := range mu {
			for cl, w := range p.Map[c] {
				p.Offset[cl] += v * w
			}
		}
	}
	return p, nil
}

// sparseRows is X_c = X − 1μᵀ with X sparse by rows (column indices
// compressed): its products never form the dense centred matrix.
type sparseRows struct {
	cols [][]int
	vals [][]float64
	mu   []float64
}

// mul writes X_c w into out (one value per row).
func (a sparseRows) mul(w, out []float64) {
	mw := dotDense(a.mu, w)
	for r := range a.cols {
		s := -mw
		for i, c := range a.cols[r] {
			s += a.vals[r][i] * w[c]
		}
		out[r] = s
	}
}

// tmul writes X_cᵀ u into out (one value per column).
func (a sparseRows) tmul(u, out []float64) {
	clear(out)
	su := 0.0
	for r := range a.cols {
		su += u[r]
		for i, c := range a.cols[r] {
			out[c] += a.vals[r][i] * u[r]
		}
	}
	for c, m := range a.mu {
		out[c] -= m * su
	}
}

// solve returns w with (X_cᵀX_c + λI) w = b by conjugate gradients from
// zero; tmp holds one value per row.
func (a sparseRows) solve(b []float64, lambda float64, tmp []float64) ([]float64, error) {
	m := len(b)
	w := make([]float64, m)
	r := slices.Clone(b)
	p := slices.Clone(b)
	ap := make([]float64, m)
	rr := dotDense(r, r)
	stop := cgTolerance * cgTolerance * rr
	for it := 0; it < cgMaxIters; it++ {
		if rr <= stop {
			return w, nil
		}
		a.mul(p, tmp)
		a.tmul(tmp, ap)
		for c := range ap {
			ap[c] += lambda * p[c]
		}
		alpha := rr / dotDense(p, ap)
		for c := range w {
			w[c] += alpha * p[c]
			r[c] -= alpha * ap[c]
		}
		next := dotDense(r, r)
		beta := next / rr
		rr = next
		for c := range p {
			p[c] = r[c] + beta*p[c]
		}
	}
	if rr <= stop {
		return w, nil
	}
	return nil, fmt.Errorf("mlca: conjugate gradients still at relative residual %.2g after %d iterations", math.Sqrt(rr/(stop/(cgTolerance*cgTolerance))), cgMaxIters)
}

func dotDense(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

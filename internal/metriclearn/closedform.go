package metriclearn

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// ErrNoData is returned when a fit gets no labeled rows.
var ErrNoData = errors.New("mlca: no labeled rows to learn from")

// Whitener holds the non-null eigenpairs of a Gram matrix XᵀX = V Λ Vᵀ. It
// gives the pseudo-inverse (XᵀX)† = V Λ⁻¹ Vᵀ and the left singular vectors
// of X, U = X V Λ^{-1/2}, without ever forming an n×n or n×d factorization:
// one pass over the rows (O(nd²)) and one d×d eigendecomposition (O(d³)).
// This is the streaming route of the MLCA spec §2.4; it squares the
// condition number of X, which the relative cut-off accounts for.
type Whitener struct {
	// V is d×s, the eigenvectors whose eigenvalues pass the cut-off.
	V *mat.Dense
	// Lambda holds the s retained eigenvalues (squared singular values of X).
	Lambda []float64
}

// NewWhitener factorizes the Gram matrix g = XᵀX of an n-row matrix X.
// Eigenvalues below max(n,d)·eps·λ_max are treated as zero, the analogue of
// MATLAB's pinv tolerance for a Gram matrix formed in floating point.
func NewWhitener(g *mat.SymDense, n int) (*Whitener, error) {
	d := g.SymmetricDim()
	var es mat.EigenSym
	if !es.Factorize(g, true) {
		return nil, errors.New("mlca: eigendecomposition of the Gram matrix did not converge")
	}
	vals := es.Values(nil)
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	lmax := 0.0
	for _, v := range vals {
		lmax = max(lmax, v)
	}
	if lmax <= 0 {
		return nil, fmt.Errorf("%w: the data matrix is zero", ErrNoData)
	}
	tol := float64(max(n, d)) * 0x1p-52 * lmax
	var keep []int
	// Descending order, so the leading directions come first.
	for j := d - 1; j >= 0; j-- {
		if vals[j] > tol {
			keep = append(keep, j)
		}
	}
	w := &Whitener{V: mat.NewDense(d, len(keep), nil), Lambda: make([]float64, len(keep))}
	for c, j := range keep {
		w.Lambda[c] = vals[j]
		for i := 0; i < d; i++ {
			w.V.Set(i, c, vecs.At(i, j))
		}
	}
	return w, nil
}

// Rank is the number of retained directions s = rank(X).
func (w *Whitener) Rank() int { return len(w.Lambda) }

// Project returns U = X V Λ^{-1/2} (n×s): orthonormal columns spanning the
// column space of X, so that U Uᵀ = X X†.
func (w *Whitener) Project(x mat.Matrix) *mat.Dense {
	var u mat.Dense
	u.Mul(x, w.V)
	for c, l := range w.Lambda {
		s := 1 / math.Sqrt(l)
		col := u.ColView(c)
		for i := 0; i < col.Len(); i++ {
			u.Set(i, c, col.AtVec(i)*s)
		}
	}
	return &u
}

// Solve returns (XᵀX)† B for a d×k matrix B.
func (w *Whitener) Solve(b mat.Matrix) *mat.Dense { return w.SolveRidge(b, 0) }

// SolveRidge returns (XᵀX + λI)⁻¹ B restricted to the row space of X, which
// is the whole answer when B = XᵀJ lies in that space (the closed form);
// λ = 0 is Solve.
func (w *Whitener) SolveRidge(b mat.Matrix, lambda float64) *mat.Dense {
	var t mat.Dense
	t.Mul(w.V.T(), b)
	for c, l := range w.Lambda {
		row := t.RawRowView(c)
		for j := range row {
			row[j] /= l + lambda
		}
	}
	var out mat.Dense
	out.Mul(w.V, &t)
	return &out
}

// Gram returns XᵀX.
func Gram(x mat.Matrix) *mat.SymDense {
	_, d := x.Dims()
	g := mat.NewSymDense(d, nil)
	g.SymOuterK(1, x.T())
	return g
}

// Train is the closed form of MLCA (Law et al. 2016, eq. 16-17): given rows X
// (n×d) and a cluster label per row in 0..k-1, it returns L = W = X† J (d×k),
// J[j, c] = 1/sqrt(q_c) for the rows of cluster c, so that M = W Wᵀ. A
// cluster with no row gets a zero column (J = Y / max(1, ‖y_c‖), paper
// Appendix A.6.1), which keeps class indices aligned with the vocabulary.
//
// It costs O(nd²) (one Gram pass) plus O(d³): linear in n, independent of k.
func Train(x *mat.Dense, labels []int, k int) (*mat.Dense, error) {
	return TrainRidge(x, labels, k, 0)
}

// TrainSets is the multi-set training of the paper (Section 3.3, spec §2.3):
// m labelled sets (X_i, labels_i) with consistent cluster identities are
// stacked into one problem. It streams over the sets, accumulating XᵀX and
// the per-cluster sums, so memory is O(d² + dk) whatever the number of rows;
// the result equals Train on the concatenated rows.
func TrainSets(sets []*mat.Dense, labels [][]int, k int) (*mat.Dense, error) {
	if len(sets) != len(labels) || len(sets) == 0 {
		return nil, fmt.Errorf("mlca: %d sets with %d label vectors", len(sets), len(labels))
	}
	_, d := sets[0].Dims()
	g := mat.NewSymDense(d, nil)
	sums := mat.NewDense(d, k, nil)
	q := make([]float64, k)
	n := 0
	for s, x := range sets {
		rows, cols := x.Dims()
		if cols != d || rows != len(labels[s]) {
			return nil, fmt.Errorf("mlca: set %d is %d×%d with %d labels, want %d columns", s, rows, cols, len(labels[s]), d)
		}
		g.SymRankK(g, 1, x.T())
		for i, l := range labels[s] {
			if l < 0 || l >= k {
				return nil, fmt.Errorf("mlca: set %d row %d: label %d outside 0..%d", s, i, l, k-1)
			}
			q[l]++
			for j, v := range x.RawRowView(i) {
				sums.Set(j, l, sums.At(j, l)+v)
			}
		}
		n += rows
	}
	if n == 0 {
		return nil, ErrNoData
	}
	for c := range q {
		if q[c] > 0 {
			col := sums.ColView(c).(*mat.VecDense)
			col.ScaleVec(1/math.Sqrt(q[c]), col)
		}
	}
	w, err := NewWhitener(g, n)
	if err != nil {
		return nil, err
	}
	return w.Solve(sums), nil
}

// TrainWith is Train with the Gram factorization already computed.
func TrainWith(w *Whitener, x *mat.Dense, labels []int, k int) (*mat.Dense, error) {
	return trainWith(w, x, labels, k, 0)
}

// TrainRidge is Train with a ridge: L = (XᵀX + λI)⁻¹ Xᵀ J with λ = ridge
// times the mean squared norm of a row of X, so that ridge does not depend
// on the scale of the features. ridge = 0 is Train, the paper's
// pseudo-inverse, which interpolates the training rows when they are fewer
// than the features (hence SparseRidge on passages).
func TrainRidge(x *mat.Dense, labels []int, k int, ridge float64) (*mat.Dense, error) {
	n, _ := x.Dims()
	if n != len(labels) {
		return nil, fmt.Errorf("mlca: %d rows but %d labels", n, len(labels))
	}
	if n == 0 {
		return nil, ErrNoData
	}
	w, err := NewWhitener(Gram(x), n)
	if err != nil {
		return nil, err
	}
	tr := 0.0
	for _, l := range w.Lambda {
		tr += l
	}
	return trainWith(w, x, labels, k, ridge*tr/float64(n))
}

func trainWith(w *Whitener, x *mat.Dense, labels []int, k int, lambda float64) (*mat.Dense, error) {
	xtj, err := ClassSums(x, labels, k)
	if err != nil {
		return nil, err
	}
	return w.SolveRidge(xtj, lambda), nil
}

// ClassSums returns Xᵀ J (d×k): column c is the sum of the rows of cluster c
// divided by sqrt(q_c). Exploiting the sparsity of J makes it O(nd).
func ClassSums(x *mat.Dense, labels []int, k int) (*mat.Dense, error) {
	n, d := x.Dims()
	q := make([]int, k)
	for i, l := range labels {
		if l < 0 || l >= k {
			return nil, fmt.Errorf("mlca: label %d of row %d outside 0..%d", l, i, k-1)
		}
		q[l]++
	}
	out := mat.NewDense(d, k, nil)
	for i := 0; i < n; i++ {
		l := labels[i]
		s := 1 / math.Sqrt(float64(q[l]))
		row := x.RawRowView(i)
		for j, v := range row {
			out.Set(j, l, out.At(j, l)+s*v)
		}
	}
	return out, nil
}

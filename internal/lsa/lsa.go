// Package lsa holds the latent semantic basis of sparse passages: a
// randomized truncated SVD that gives the kinds without a sparse path
// (and MIMLCA's assignment step) a few hundred dense coordinates per passage.
package lsa

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// Basis is a rank-r latent semantic basis of sparse passages (LSA): the top
// r right singular vectors of the matrix of weighted training passages,
// so that a passage x maps to the r coordinates Vᵀx. It is what a kind with
// no sparse path is fitted on: the densified 2^17 hashed features would
// cost dim × instances memory and, with far more features than passages,
// leave a metric learned on them nothing but noise to whiten. Only the
// features seen in training have non-zero rows, so only theirs are stored.
type Basis struct {
	Idx  []int32 `json:"idx"` // the seen features, ascending
	Rank int     `json:"rank"`
	// Rows holds, row-major, Rank float32 coordinates per entry of Idx,
	// little-endian (encoding/json gives them as base64: a few MB where
	// decimal text would take three times more).
	Rows []byte `json:"rows"`
}

// errNoFeatures marks training passages with no feature to build a basis on.
var errNoFeatures = errors.New("lsa: no passage with a non-zero feature")

// lsaOversample and lsaPowerIters are Halko, Martinsson and Tropp's
// (SIAM Review 2011) oversampling p and power iterations q of the
// randomized range finder (their Algorithm 4.4). Text spectra decay
// slowly, hence more iterations than their default of one or two;
// TestBasisMatchesSVD holds the result to the exact SVD.
const (
	lsaOversample = 10
	lsaPowerIters = 6
)

// FitBasis computes the top-rank right singular vectors of the matrix
// whose rows are the passages xs, by the randomized range finder with power
// iterations and the eigenvectors of the small projected Gram matrix (an
// SVD of the projection, at a fraction of its cost); rng draws the test
// matrix, so a seed gives one basis. A rank at or above the number of
// passages or of seen features is cut to the smaller of the two.
func FitBasis(ctx context.Context, xs []mil.SparseVec, rank int, rng *rand.Rand) (Basis, error) {
	// Compress the columns to the seen features.
	idx, seen := mil.SeenFeatures(xs)
	n, m := len(xs), len(idx)
	if m == 0 {
		return Basis{}, errNoFeatures
	}
	rank = min(rank, n, m)
	l := min(rank+lsaOversample, n, m)
	a := csr{rows: make([][]entry, n), cols: m}
	for i, x := range xs {
		for k, j := range x.Idx {
			if x.Val[k] != 0 {
				a.rows[i] = append(a.rows[i], entry{col: seen[j], val: x.Val[k]})
			}
		}
	}
	omega := mat.NewDense(m, l, nil)
	for i := range m {
		for c := range l {
			omega.Set(i, c, rng.NormFloat64())
		}
	}
	q := orthonormal(a.mul(omega)) // n × l
	for range lsaPowerIters {
		if err := ctx.Err(); err != nil {
			return Basis{}, err
		}
		// Orthonormalizing on the short side only: one step of AAᵀ
		// squares the singular values' ratios, far from what float64
		// loses, and the m-side basis would cost m/n times more.
		q = orthonormal(a.mul(a.tmul(q)))
	}
	q = orthonormal(q) // a second pass on the last repairs its rounding (CholeskyQR2)
	// B = Qᵀ A (l × m): its right singular vectors are A's on Q's range,
	// the eigenvectors of BᵀB, which are Bᵀ's orthonormalized by the
	// eigenvectors of the small BBᵀ (orthonormal, whose columns
	// come in ascending order of singular value).
	u := orthonormal(a.tmul(q)) // m × l
	_, lu := u.Dims()
	rank = min(rank, lu)
	rows := make([]byte, 0, 4*m*rank)
	for i := range m {
		for c := range rank {
			rows = binary.LittleEndian.AppendUint32(rows, math.Float32bits(float32(u.At(i, lu-1-c))))
		}
	}
	return Basis{Idx: idx, Rank: rank, Rows: rows}, nil
}

// Project returns Vᵀx, x's coordinates in the basis (features not seen in
// training contribute nothing), L2-normalised: LSA compares passages by
// the cosine of their coordinates, and a short passage's vector is short
// in the basis as in the terms (normalising lifts MIMLCA's passage
// accuracy on text_dev from 0.59 to 0.63 at rank 100).
func (b Basis) Project(x mil.SparseVec) []float64 {
	out := b.project(x)
	n := 0.0
	for _, v := range out {
		n += v * v
	}
	if n > 0 {
		n = math.Sqrt(n)
		for c := range out {
			out[c] /= n
		}
	}
	return out
}

// project is Vᵀx.
func (b Basis) project(x mil.SparseVec) []float64 {
	out := make([]float64, b.Rank)
	k := 0
	for i, j := range x.Idx {
		for k < len(b.Idx) && b.Idx[k] < j {
			k++
		}
		if k == len(b.Idx) {
			break
		}
		if b.Idx[k] != j || x.Val[i] == 0 {
			continue
		}
		row := b.Rows[4*k*b.Rank:]
		for c := range out {
			out[c] += x.Val[i] * float64(math.Float32frombits(binary.LittleEndian.Uint32(row[4*c:])))
		}
	}
	return out
}

// Validate checks a decoded basis.
func (b Basis) Validate() error {
	if b.Rank < 1 || len(b.Rows) != 4*b.Rank*len(b.Idx) || !slices.IsSorted(b.Idx) {
		return fmt.Errorf("lsa basis: rank %d, %d features, %d bytes of rows", b.Rank, len(b.Idx), len(b.Rows))
	}
	return nil
}

// entry is one non-zero of a csr row.
type entry struct {
	col int
	val float64
}

// csr is a sparse matrix by rows.
type csr struct {
	rows [][]entry
	cols int
}

// mul returns A·X for a dense X of cols rows.
func (a csr) mul(x *mat.Dense) *mat.Dense {
	_, l := x.Dims()
	out := mat.NewDense(len(a.rows), l, nil)
	for i, row := range a.rows {
		o := out.RawRowView(i)
		for _, e := range row {
			for c, v := range x.RawRowView(e.col) {
				o[c] += e.val * v
			}
		}
	}
	return out
}

// tmul returns Aᵀ·Y for a dense Y of len(rows) rows.
func (a csr) tmul(y *mat.Dense) *mat.Dense {
	_, l := y.Dims()
	out := mat.NewDense(a.cols, l, nil)
	for i, row := range a.rows {
		yi := y.RawRowView(i)
		for _, e := range row {
			o := out.RawRowView(e.col)
			for c, v := range yi {
				o[c] += e.val * v
			}
		}
	}
	return out
}

// orthonormal returns an orthonormal basis of y's column space by the
// eigenvectors of the small Gram matrix yᵀy (so O(rows·cols²), where a
// full QR's Q would be rows × rows): Q = y W Λ^(-1/2), its columns in
// ascending order of eigenvalue. Directions whose eigenvalue is below
// 1e-12 of the largest are dropped, so the basis may have fewer columns
// than y.
func orthonormal(y *mat.Dense) *mat.Dense {
	var g mat.SymDense
	g.SymOuterK(1, y.T())
	var eig mat.EigenSym
	if !eig.Factorize(&g, true) {
		return y
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	top := slices.Max(vals)
	var keep []int
	for c, v := range vals {
		if v > 1e-12*top && v > 0 {
			keep = append(keep, c)
		}
	}
	w := mat.NewDense(len(vals), max(len(keep), 1), nil)
	for t, c := range keep {
		s := 1 / math.Sqrt(vals[c])
		for i := range len(vals) {
			w.Set(i, t, vecs.At(i, c)*s)
		}
	}
	var q mat.Dense
	q.Mul(y, w)
	return &q
}

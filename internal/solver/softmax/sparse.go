package softmax

import (
	"fmt"
	"slices"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// Sparse design matrices. A text set's N × (Dim+1) dense X would take
// gigabytes for a few tens of thousands of non-zeros; a Problem built by
// NewSparseProblem keeps the rows sparse (SX, X nil) and computes the
// logits X·Wᵀ and the gradient (T − P)ᵀX over the non-zeros. The chunks,
// their order and the reduction are the dense path's, so the result agrees
// with it up to the rounding of the products' summation order
// (TestSparseProblemMatchesDense). Each chunk's partial gradient covers
// only the features its rows touch (sparseLayout), so the memory of an
// evaluation is proportional to the non-zeros, not chunks × Dim.

// NewSparseProblem is NewProblem with sparse instances (indices < dim;
// the bias column is implicit). targets may be nil.
func NewSparseProblem(classes, dim int, x []mil.SparseVec, targets [][]float64, l2 float64, workers int) (*Problem, error) {
	if err := checkSettings(classes, l2); err != nil {
		return nil, err
	}
	for i, row := range x {
		if err := row.Validate(dim); err != nil {
			return nil, fmt.Errorf("softmax: instance %d: %w", i, err)
		}
	}
	n := len(x)
	p := &Problem{Classes: classes, Dim: dim, N: n, L2: l2, Workers: workers, SX: x, T: make([]float64, n*classes)}
	if err := p.setTargets(targets); err != nil {
		return nil, err
	}
	return p, nil
}

// LogitsSparse is Logits of a sparse instance.
func (m *Model) LogitsSparse(x mil.SparseVec, out []float64) {
	d := m.Dim
	for c := 0; c < m.Classes; c++ {
		row := m.W[c*(d+1) : (c+1)*(d+1)]
		s := row[d]
		for k, j := range x.Idx {
			s += row[j] * x.Val[k]
		}
		out[c] = s
	}
}

// chunkSparse is chunk for a sparse design matrix; w is the row-major
// Classes × (Dim+1) weight matrix.
func (p *Problem) chunkSparse(j int, w []float64, g []float64, scratch []float64, cached bool) float64 {
	lo := j * chunkRows
	hi := min(p.N, lo+chunkRows)
	rows := hi - lo
	d := p.Dim
	c := p.Classes
	logits := p.logits[lo*c : hi*c]
	if !cached {
		m := Model{Classes: c, Dim: d, W: w}
		for r := range rows {
			m.LogitsSparse(p.SX[lo+r], logits[r*c:(r+1)*c])
		}
	}
	z := scratch[:rows*c]
	t := p.T[lo*c : hi*c]
	val := 0.0
	for r := range rows {
		lr := logits[r*c : (r+1)*c]
		zr := z[r*c : (r+1)*c]
		val = addRowObjective(val, lr, t[r*c:(r+1)*c], zr, g != nil)
	}
	if g != nil {
		// g is over the chunk's own features (sparseLayout); the sums
		// run in the order of a full-width buffer's, row by row.
		nf := len(p.feats[j])
		clear(g)
		for r := range rows {
			x := p.SX[lo+r]
			loc := p.local[lo+r]
			for k := range c {
				zk := z[r*c+k]
				gk := g[k*(nf+1) : (k+1)*(nf+1)]
				for q, l := range loc {
					gk[l] += zk * x.Val[q]
				}
				gk[nf] += zk
			}
		}
	}
	return val
}

// sparseLayout lists the features each chunk's rows touch (p.feats) and
// the position of every non-zero in its chunk's list (p.local). Its memory
// is proportional to the non-zeros.
func (p *Problem) sparseLayout(nChunks int) {
	p.feats = make([][]int32, nChunks)
	p.local = make([][]int32, p.N)
	for j := range nChunks {
		lo, hi := j*chunkRows, min(p.N, (j+1)*chunkRows)
		var f []int32
		for _, x := range p.SX[lo:hi] {
			f = append(f, x.Idx...)
		}
		slices.Sort(f)
		f = slices.Clip(slices.Compact(f))
		p.feats[j] = f
		for i := lo; i < hi; i++ {
			loc := make([]int32, len(p.SX[i].Idx))
			for q, jj := range p.SX[i].Idx {
				l, _ := slices.BinarySearch(f, jj)
				loc[q] = int32(l)
			}
			p.local[i] = loc
		}
	}
}

// reduceSparse sums the chunks' gradients into the full-width grad, chunk
// by chunk in order: every entry gets the same additions in the same order
// as the dense path's reduction, less the additions of zeros.
func (p *Problem) reduceSparse(grad []float64) {
	clear(grad)
	c, d1 := p.Classes, p.Dim+1
	for j, f := range p.feats {
		nf := len(f)
		g := p.partGrad[j]
		for k := range c {
			row := grad[k*d1 : (k+1)*d1]
			gk := g[k*(nf+1) : (k+1)*(nf+1)]
			for l, jj := range f {
				row[jj] += gk[l]
			}
			row[d1-1] += gk[nf]
		}
	}
}

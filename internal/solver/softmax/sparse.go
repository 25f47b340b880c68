package softmax

import (
	"fmt"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// Sparse design matrices. A text set's N × (Dim+1) dense X would take
// gigabytes for a few tens of thousands of non-zeros; a Problem built by
// NewSparseProblem keeps the rows sparse (SX, X nil) and computes the
// logits X·Wᵀ and the gradient (T − P)ᵀX over the non-zeros. The chunks,
// their order and the reduction are the dense path's, so the result agrees
// with it up to the rounding of the products' summation order
// (TestSparseProblemMatchesDense).

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
	d1 := d + 1
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
		clear(g)
		for r := range rows {
			x := p.SX[lo+r]
			for k := range c {
				zk := z[r*c+k]
				gk := g[k*d1 : (k+1)*d1]
				for q, jj := range x.Idx {
					gk[jj] += zk * x.Val[q]
				}
				gk[d] += zk
			}
		}
	}
	return val
}

package softmax

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// TestSparseProblemMatchesDense compares a sparse Problem with the dense
// one on the same rows and soft targets (more rows than one chunk, one
// all-zero row): objective and gradient at random weights, and the L-BFGS
// maximiser. It catches a gradient entry dropped or put in another class's
// row, a bias column missed, a chunk's gradient not cleared before
// accumulation, and cached logits read for the wrong rows.
func TestSparseProblemMatchesDense(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const (
		n, d, c = 300, 40, 3
	)
	xs := make([][]float64, n)
	sx := make([]mil.SparseVec, n)
	targets := make([][]float64, n)
	for i := range xs {
		xs[i] = make([]float64, d)
		if i != 7 {
			for range 4 {
				xs[i][r.IntN(d)] = r.NormFloat64()
			}
		}
		sx[i] = mil.SparseOf(xs[i])
		targets[i] = make([]float64, c)
		targets[i][r.IntN(c)] = 0.7
		targets[i][r.IntN(c)] += 0.3
	}
	dp, err := NewProblem(c, d, xs, targets, 0.1, 2)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := NewSparseProblem(c, d, sx, targets, 0.1, 2)
	if err != nil {
		t.Fatal(err)
	}
	np := c * (d + 1)
	for trial := range 3 {
		w := make([]float64, np)
		for j := range w {
			w[j] = r.NormFloat64()
		}
		gd, gs := make([]float64, np), make([]float64, np)
		vd, vs := dp.Evaluate(w, gd), sp.Evaluate(w, gs)
		// Twice: the second evaluation reads the cached logits.
		vs2 := sp.Evaluate(w, gs)
		if math.Abs(vd-vs) > 1e-12 || vs2 != vs {
			t.Fatalf("trial %d: objective dense %v, sparse %v, sparse cached %v", trial, vd, vs, vs2)
		}
		for j := range gd {
			if math.Abs(gd[j]-gs[j]) > 1e-12 {
				t.Fatalf("trial %d: gradient[%d] dense %v, sparse %v", trial, j, gd[j], gs[j])
			}
		}
		lg, ls := make([]float64, c), make([]float64, c)
		m := &Model{Classes: c, Dim: d, W: w}
		m.Logits(xs[3], lg)
		m.LogitsSparse(sx[3], ls)
		for k := range lg {
			if math.Abs(lg[k]-ls[k]) > 1e-12 {
				t.Fatalf("logit %d: dense %v, sparse %v", k, lg[k], ls[k])
			}
		}
	}
	// With L2 = 0.1 the maximiser is conditioned well enough that the
	// two paths' rounding moves it by less than 1e-9 (at 0.01 it moves
	// by about 2e-9: both runs stop where the line search can no longer
	// resolve the objective).
	var od, os LBFGS
	wd, ws := make([]float64, np), make([]float64, np)
	if _, err := od.Maximize(context.Background(), dp, wd, 2000, 1e-13, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Maximize(context.Background(), sp, ws, 2000, 1e-13, 0); err != nil {
		t.Fatal(err)
	}
	for j := range wd {
		if math.Abs(wd[j]-ws[j]) > 1e-9 {
			t.Fatalf("maximiser w[%d]: dense %v, sparse %v", j, wd[j], ws[j])
		}
	}
}

// fullWidthGradient is the sparse gradient as computed before the chunks
// kept their gradient over their own features: one Classes × (Dim+1)
// buffer per chunk, reduced in chunk order. It is the reference of
// TestSparseChunkGradientMatchesFullWidth.
func fullWidthGradient(p *Problem, w []float64) []float64 {
	c, d1 := p.Classes, p.Dim+1
	grad := make([]float64, c*d1)
	m := Model{Classes: c, Dim: p.Dim, W: w}
	for lo := 0; lo < p.N; lo += chunkRows {
		hi := min(p.N, lo+chunkRows)
		g := make([]float64, c*d1)
		lr, z := make([]float64, c), make([]float64, c)
		for i := lo; i < hi; i++ {
			m.LogitsSparse(p.SX[i], lr)
			addRowObjective(0, lr, p.T[i*c:(i+1)*c], z, true)
			for k := range c {
				for q, j := range p.SX[i].Idx {
					g[k*d1+int(j)] += z[k] * p.SX[i].Val[q]
				}
				g[k*d1+d1-1] += z[k]
			}
		}
		for j := range grad {
			grad[j] += g[j]
		}
	}
	for j := range grad {
		grad[j] /= float64(p.N)
	}
	p.penalty(w, grad)
	return grad
}

// TestSparseChunkGradientMatchesFullWidth holds the per-chunk compact
// gradient (features touched by the chunk only) to the full-width buffers
// it replaced, on a wide problem whose chunks touch few of its features
// (as text does), for 1 to 3 workers and for a stochastic M-step's
// sub-problem built as a struct literal; and checks that the buffers are
// proportional to the non-zeros, not to chunks × Dim. It catches a
// non-zero accumulated at the wrong local position, a bias dropped, a
// chunk's features taken from another chunk and a reduction that skips
// or repeats a chunk.
func TestSparseChunkGradientMatchesFullWidth(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	const n, d, c = 700, 5000, 3
	sx := make([]mil.SparseVec, n)
	targets := make([][]float64, n)
	nnz := 0
	for i := range sx {
		x := map[int]float64{}
		for range 1 + r.IntN(12) {
			x[r.IntN(d)] = r.Float64()
		}
		if i%50 == 0 {
			x = nil // empty rows: only the bias
		}
		dense := make([]float64, d)
		for j, v := range x {
			dense[j] = v
		}
		sx[i] = mil.SparseOf(dense)
		nnz += len(sx[i].Idx)
		targets[i] = make([]float64, c)
		targets[i][r.IntN(c)] = 1
	}
	w := make([]float64, c*(d+1))
	for j := range w {
		w[j] = r.NormFloat64()
	}
	for _, tc := range []struct {
		name    string
		l2      float64
		workers int
		rows    int // a struct-literal sub-problem of the first rows (0: NewSparseProblem)
	}{
		{"one worker", 0, 1, 0},
		{"two workers, l2", 1e-3, 2, 0},
		{"three workers", 0, 3, 0},
		{"sub-problem", 1e-4, 2, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewSparseProblem(c, d, sx, targets, tc.l2, tc.workers)
			if err != nil {
				t.Fatal(err)
			}
			if tc.rows > 0 {
				p = &Problem{Classes: c, Dim: d, N: tc.rows, L2: tc.l2, Workers: tc.workers, SX: sx[:tc.rows], T: p.T[:tc.rows*c]}
			}
			want := fullWidthGradient(p, w)
			got := make([]float64, len(w))
			for pass := range 2 { // the second pass reuses the buffers and the cached logits
				p.Evaluate(w, got)
				for j := range want {
					if math.Abs(got[j]-want[j]) > 1e-9 {
						t.Fatalf("pass %d: gradient[%d] = %v, full-width %v", pass, j, got[j], want[j])
					}
				}
			}
			held := 0
			for _, g := range p.partGrad {
				held += len(g)
			}
			chunks := (p.N + chunkRows - 1) / chunkRows
			if limit := c * (nnz + chunks); held > limit {
				t.Fatalf("chunk gradients hold %d floats, want at most classes × (non-zeros + chunks) = %d", held, limit)
			}
		})
	}
}

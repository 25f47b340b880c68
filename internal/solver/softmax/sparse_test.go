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

package sparsesgd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// TestMatchesDense runs the Pegasos schedule η_τ = 1/(τ + 1) (its first
// decay is 0, a reset) for long enough that a falls below the rescale
// threshold, with random sparse additions, on Averaged and on a dense
// vector with an explicit running sum (the reference), and compares the
// current and the averaged weights (counting from 3/8 of the run, so the
// rescale falls inside the averaged window). It catches a missed T correction, a
// rescale that forgets B, and a decay applied to the wrong vector.
func TestMatchesDense(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const (
		d     = 8
		steps = 2_400_000
	)
	w0 := make([]float64, d)
	for j := range w0 {
		w0[j] = r.NormFloat64()
	}
	s := New(w0)
	w := append([]float64(nil), w0...)
	sum := make([]float64, d)
	counted, rescaled := 0, false
	x := make([]float64, d)
	for step := range steps {
		f := 1 - 1/float64(step+1)
		s.Decay(f)
		for j := range w {
			w[j] *= f
		}
		clear(x)
		x[r.IntN(d)] = r.NormFloat64()
		x[r.IntN(d)] = r.NormFloat64()
		sx := mil.SparseOf(x)
		if step%1000 == 0 {
			var dot float64
			for j := range w {
				dot += w[j] * x[j]
			}
			if got := s.Dot(sx); math.Abs(got-dot) > 1e-9*math.Max(1, math.Abs(dot)) {
				t.Fatalf("step %d: Dot = %v, dense %v", step, got, dot)
			}
		}
		c := r.NormFloat64()
		s.Add(c, sx)
		for j := range w {
			w[j] += c * x[j]
		}
		before := s.a
		if step >= steps*3/8 { // counting starts before the rescale near step 10⁶
			s.Count()
			counted++
			for j := range w {
				sum[j] += w[j]
			}
		} else {
			s.Step()
		}
		rescaled = rescaled || s.a > before
	}
	if !rescaled {
		t.Fatal("the run never rescaled: the test does not cover renorm")
	}
	cur, avg := s.W(), s.Average()
	for j := range w {
		if math.Abs(cur[j]-w[j]) > 1e-9 {
			t.Fatalf("w[%d] = %v, dense %v", j, cur[j], w[j])
		}
		if want := sum[j] / float64(counted); math.Abs(avg[j]-want) > 1e-9 {
			t.Fatalf("average[%d] = %v, dense %v", j, avg[j], want)
		}
	}
	if s.Counted() != counted {
		t.Fatalf("Counted = %d, want %d", s.Counted(), counted)
	}
}

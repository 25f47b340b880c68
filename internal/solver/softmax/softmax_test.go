package softmax

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

func randProblem(t *testing.T, rng *rand.Rand, n, classes, dim int, l2 float64, soft bool) *Problem {
	t.Helper()
	x := make([][]float64, n)
	tg := make([][]float64, n)
	for i := range x {
		x[i] = make([]float64, dim)
		for j := range x[i] {
			x[i][j] = rng.NormFloat64()
		}
		tg[i] = make([]float64, classes)
		if soft {
			s := 0.0
			for c := range tg[i] {
				tg[i][c] = rng.Float64()
				s += tg[i][c]
			}
			for c := range tg[i] {
				tg[i][c] /= s
			}
		} else {
			tg[i][rng.IntN(classes)] = 1
		}
	}
	p, err := NewProblem(classes, dim, x, tg, l2, 2)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGradientMatchesFiniteDifferences(t *testing.T) {
	tests := []struct {
		name            string
		n, classes, dim int
		l2              float64
		soft            bool
	}{
		{"hard", 30, 3, 4, 0, false},
		{"soft+l2", 300, 5, 3, 0.3, true}, // several chunks
		{"bias only", 10, 4, 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			p := randProblem(t, rng, tc.n, tc.classes, tc.dim, tc.l2, tc.soft)
			w := make([]float64, tc.classes*(tc.dim+1))
			for i := range w {
				w[i] = rng.NormFloat64()
			}
			g := make([]float64, len(w))
			p.Evaluate(w, g)
			const h = 1e-6
			for i := range w {
				old := w[i]
				w[i] = old + h
				fp := p.Evaluate(w, nil)
				w[i] = old - h
				fm := p.Evaluate(w, nil)
				w[i] = old
				num := (fp - fm) / (2 * h)
				if math.Abs(num-g[i]) > 1e-6*math.Max(1, math.Abs(num)) {
					t.Errorf("grad[%d] = %.9g, finite difference %.9g", i, g[i], num)
				}
			}
		})
	}
}

// With no features the maximum-likelihood model is closed form: the biases
// are log class frequencies (up to a constant).
func TestLBFGSRecoversClassFrequencies(t *testing.T) {
	counts := []int{5, 1, 14}
	var x, tg [][]float64
	for c, k := range counts {
		for range k {
			x = append(x, []float64{})
			row := make([]float64, len(counts))
			row[c] = 1
			tg = append(tg, row)
		}
	}
	p, err := NewProblem(3, 0, x, tg, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := New(3, 0)
	if _, err := p.MaximizeLBFGS(context.Background(), m.W, 500, 1e-10); err != nil {
		t.Fatal(err)
	}
	probs := make([]float64, 3)
	m.Probs(nil, probs)
	for c, k := range counts {
		want := float64(k) / 20
		if math.Abs(probs[c]-want) > 1e-6 {
			t.Errorf("p(%d) = %.8f, want %.8f", c, probs[c], want)
		}
	}
}

func TestAscendIsMonotoneAndReachesLBFGSOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := randProblem(t, rng, 200, 4, 3, 0.05, true)
	w := make([]float64, 4*4)
	prev := p.Evaluate(w, nil)
	step := 0.0
	for range 400 {
		res, err := p.Ascend(context.Background(), w, 1, 0, step)
		if err != nil {
			t.Fatal(err)
		}
		if res.Value < prev {
			t.Fatalf("objective decreased: %v -> %v", prev, res.Value)
		}
		prev, step = res.Value, res.StepSize
	}
	ref := make([]float64, len(w))
	best, err := p.MaximizeLBFGS(context.Background(), ref, 1000, 1e-10)
	if err != nil {
		t.Fatal(err)
	}
	// The problem is strictly concave (L2 > 0): both must reach the same optimum.
	if math.Abs(best-prev) > 1e-7 {
		t.Errorf("gradient ascent reached %.10f, L-BFGS %.10f", prev, best)
	}
}

func TestEvaluateIndependentOfWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	p := randProblem(t, rng, 1000, 6, 5, 0.1, true)
	w := make([]float64, 6*6)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	var ref []float64
	var refV float64
	for _, workers := range []int{1, 2, 3, 8} {
		p.Workers = workers
		g := make([]float64, len(w))
		v := p.Evaluate(w, g)
		if ref == nil {
			ref, refV = g, v
			continue
		}
		if v != refV {
			t.Errorf("workers=%d: value %v, want %v bit for bit", workers, v, refV)
		}
		for i := range g {
			if g[i] != ref[i] {
				t.Fatalf("workers=%d: grad[%d] differs", workers, i)
			}
		}
	}
}

func TestSoftmaxStable(t *testing.T) {
	z := []float64{1000, 1000, -1000}
	if got := LogSumExp(z); math.Abs(got-(1000+math.Ln2)) > 1e-12 {
		t.Errorf("LogSumExp = %v", got)
	}
	SoftmaxInPlace(z)
	if z[0] != 0.5 || z[1] != 0.5 || z[2] != 0 {
		t.Errorf("softmax = %v", z)
	}
}

package softmax

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCachedLogits: after an evaluation at w the Problem holds X·Wᵀ at w
// (checked against Model.Logits), none at other weights; an evaluation
// that reuses them (same weights, new targets) gives bit for bit what a
// fresh Problem computes.
func TestCachedLogits(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	p := randProblem(t, rng, 300, 4, 3, 0.1, true)
	m := New(4, 3)
	for i := range m.W {
		m.W[i] = rng.NormFloat64()
	}
	if p.CachedLogits(m.W) != nil {
		t.Fatal("logits before any evaluation")
	}
	p.Evaluate(m.W, nil)
	z := p.CachedLogits(m.W)
	if z == nil {
		t.Fatal("no logits after an evaluation at w")
	}
	want := make([]float64, 4)
	for i := range p.N {
		m.Logits(p.X[i*4:i*4+3], want)
		for c := range want {
			if math.Abs(z[i*4+c]-want[c]) > 1e-12 {
				t.Fatalf("row %d class %d: cached logit %v, want %v", i, c, z[i*4+c], want[c])
			}
		}
	}
	other := append([]float64(nil), m.W...)
	other[0] += 1
	if p.CachedLogits(other) != nil {
		t.Error("logits reported for other weights")
	}

	// New targets, same weights: the cached logits serve.
	for i := range p.T {
		p.T[i] = rng.Float64()
	}
	g1 := make([]float64, len(m.W))
	v1 := p.Evaluate(m.W, g1)
	fresh := &Problem{Classes: p.Classes, Dim: p.Dim, N: p.N, X: p.X, T: p.T, L2: p.L2, Workers: 3}
	g2 := make([]float64, len(m.W))
	v2 := fresh.Evaluate(m.W, g2)
	if v1 != v2 {
		t.Errorf("value with cached logits %v, fresh %v", v1, v2)
	}
	for i := range g1 {
		if g1[i] != g2[i] {
			t.Fatalf("gradient %d with cached logits %v, fresh %v", i, g1[i], g2[i])
		}
	}
}

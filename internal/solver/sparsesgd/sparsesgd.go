// Package sparsesgd holds the weight vector of a stochastic (sub-)gradient
// method with weight decay and iterate averaging, stored so that a step on
// a sparse instance costs its non-zeros rather than the dimension.
//
// The Pegasos-style steps of the linear MIL solvers are, per sampled
// instance or bag, w ← (1 − η)w + Σ f_k x_k, and the model is the average of
// the iterates of the second half of the epochs. Done densely, the decay
// and the running average cost O(d) per step: on text (d ≈ 66,000, about
// 17 non-zeros per instance) that is thousands of times the work of the
// update itself. Here w = a·v with a scalar a, so the decay is a ← a(1 − η)
// and adding f·x is v ← v + (f/a)·x; the sum S of the counted iterates is
// kept as S = B·v + T, where B sums their scales: changing v by δ would
// change B·v by B·δ, which S must not see, so T ← T − B·δ, and counting the
// current iterate adds a to B (Bottou's averaged-SGD bookkeeping, also
// Xu 2011). When a gets small, v is rescaled to a·v (B ← B/a, a ← 1)
// before the 1/a of the updates loses precision.
//
// The results equal the dense computation up to rounding when, as under
// the Pegasos schedule, the decay over the averaged iterates is moderate
// (Π(1 − η) over the second half of the steps is about ½): B then stays
// within a small factor of the number of counted iterates. A decay by many
// orders of magnitude inside the averaged window would make B·v and T
// large and cancelling. The solvers' differential tests compare the two
// paths.
package sparsesgd

import "github.com/mimlstream/mimlstream/internal/mil"

// rescaleBelow is the scale under which v is folded back into a·v.
const rescaleBelow = 1e-6

// Averaged is w = a·v with the running sum of the counted iterates.
type Averaged struct {
	v, t    []float64
	a, b    float64
	counted int
}

// New starts from a copy of w0.
func New(w0 []float64) *Averaged {
	return &Averaged{v: append([]float64(nil), w0...), t: make([]float64, len(w0)), a: 1}
}

// Dot returns ⟨w, x⟩.
func (s *Averaged) Dot(x mil.SparseVec) float64 { return s.a * x.Dot(s.v) }

// Decay multiplies w by f ≥ 0 (1 − η). f = 0 sets w to 0, which the
// Pegasos schedule does at most at its very first step, before any
// iterate is counted.
func (s *Averaged) Decay(f float64) {
	if f > 0 {
		s.a *= f
		return
	}
	// w ← 0 without changing the running sum: fold v into T.
	for j := range s.v {
		s.t[j] += s.b * s.v[j]
		s.v[j] = 0
	}
	s.a = 1
}

// Add adds f·x to w.
func (s *Averaged) Add(f float64, x mil.SparseVec) {
	g := f / s.a
	for k, j := range x.Idx {
		d := g * x.Val[k]
		s.v[j] += d
		s.t[j] -= s.b * d
	}
}

// Count adds the current w to the average, and rescales when a is small.
func (s *Averaged) Count() {
	s.counted++
	s.b += s.a
	s.renorm()
}

// Step ends a step that is not counted (the first half of the epochs).
func (s *Averaged) Step() { s.renorm() }

func (s *Averaged) renorm() {
	if s.a >= rescaleBelow {
		return
	}
	for j := range s.v {
		s.v[j] *= s.a
	}
	s.b /= s.a
	s.a = 1
}

// Counted is the number of iterates averaged so far.
func (s *Averaged) Counted() int { return s.counted }

// W returns the current w as a new slice.
func (s *Averaged) W() []float64 {
	w := make([]float64, len(s.v))
	for j, v := range s.v {
		w[j] = s.a * v
	}
	return w
}

// Average returns the average of the counted iterates as a new slice, or
// the current w when none was counted.
func (s *Averaged) Average() []float64 {
	if s.counted == 0 {
		return s.W()
	}
	avg := make([]float64, len(s.v))
	n := float64(s.counted)
	for j := range avg {
		avg[j] = (s.b*s.v[j] + s.t[j]) / n
	}
	return avg
}

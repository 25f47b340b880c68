// Package softmax holds multinomial logistic regression in the affine form
// p(y=c|x) ∝ exp(w_c·x + β_c), the building block shared by the ORed-LR model
// (whose M-step maximises a soft-label log-likelihood) and by the supervised
// SLR baseline (hard labels). Training objectives are mean log-likelihoods, so
// the L2 weight means the same thing whatever the number of instances.
package softmax

import (
	"errors"
	"fmt"
	"math"
)

// Model is a trained multinomial logistic regression.
type Model struct {
	Classes int `json:"classes"`
	Dim     int `json:"dim"`
	// W holds one row of Dim+1 numbers per class: the weights, then the bias
	// (the paper's footnote: x is extended with a constant 1).
	W []float64 `json:"w"`
}

// New returns the all-zero model: every class equally likely.
func New(classes, dim int) *Model {
	return &Model{Classes: classes, Dim: dim, W: make([]float64, classes*(dim+1))}
}

// Clone returns a deep copy.
func (m *Model) Clone() *Model {
	c := *m
	c.W = append([]float64(nil), m.W...)
	return &c
}

// Validate checks that the shape fields agree with W.
func (m *Model) Validate() error {
	if m.Classes <= 0 || m.Dim < 0 {
		return fmt.Errorf("softmax: bad shape %d classes × %d features", m.Classes, m.Dim)
	}
	if len(m.W) != m.Classes*(m.Dim+1) {
		return fmt.Errorf("softmax: %d weights for %d classes × (%d+1) features", len(m.W), m.Classes, m.Dim)
	}
	for _, v := range m.W {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.New("softmax: non-finite weight")
		}
	}
	return nil
}

// Logits writes w_c·x + β_c for every class into out (len Classes).
func (m *Model) Logits(x, out []float64) {
	d := m.Dim
	for c := 0; c < m.Classes; c++ {
		row := m.W[c*(d+1) : (c+1)*(d+1)]
		s := row[d]
		for j, v := range x {
			s += row[j] * v
		}
		out[c] = s
	}
}

// Probs writes p(y=c|x) for every class into out (len Classes).
func (m *Model) Probs(x, out []float64) {
	m.Logits(x, out)
	SoftmaxInPlace(out)
}

// SoftmaxInPlace turns logits into probabilities, subtracting the maximum
// first so that no exponential overflows.
func SoftmaxInPlace(z []float64) {
	mx := math.Inf(-1)
	for _, v := range z {
		if v > mx {
			mx = v
		}
	}
	s := 0.0
	for i, v := range z {
		e := math.Exp(v - mx)
		z[i] = e
		s += e
	}
	for i := range z {
		z[i] /= s
	}
}

// LogSumExp returns log Σ exp(z_i) without overflow.
func LogSumExp(z []float64) float64 {
	mx := math.Inf(-1)
	for _, v := range z {
		if v > mx {
			mx = v
		}
	}
	if math.IsInf(mx, -1) {
		return mx
	}
	s := 0.0
	for _, v := range z {
		s += math.Exp(v - mx)
	}
	return mx + math.Log(s)
}

// Argmax returns the index of the largest value (the first on ties).
func Argmax(v []float64) int {
	best := 0
	for i := 1; i < len(v); i++ {
		if v[i] > v[best] {
			best = i
		}
	}
	return best
}

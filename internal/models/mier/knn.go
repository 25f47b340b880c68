package mier

import (
	"math"
	"sort"
)

// knn is the multi-label k-nearest-neighbour classifier of the paper's
// "Ours (3NN)" rows, on the enriched representations.
type knn struct {
	K      int         `json:"k"`
	X      [][]float64 `json:"x"`
	Labels [][]int     `json:"labels"`
	// Prior[c] is the training frequency of class c, the last tie-breaker.
	Prior []float64 `json:"prior"`
}

func newKNN(k int, x [][]float64, labels [][]int, classes int) *knn {
	prior := make([]float64, classes)
	for _, ls := range labels {
		for _, l := range ls {
			prior[l] += 1 / float64(len(labels))
		}
	}
	return &knn{K: k, X: x, Labels: labels, Prior: prior}
}

// scores returns, per class, the fraction of the k nearest training vectors
// (Euclidean, ties to the lower index) that carry it, plus two tie-breakers
// too small to change the fraction's order: 10⁻³ × the mean proximity
// 1/(1+dist) of those neighbours, then 10⁻⁶ × the class prior. The paper
// gives no multi-label rule for its 3-NN; bare vote fractions take only
// k+1 values, and the ranking measures (which rank ties pessimistically)
// would then be decided by ties rather than by the neighbours. A class is
// predicted when at least half of the neighbours carry it (see predict).
func (m *knn) scores(y []float64) []float64 {
	type nb struct {
		i int
		d float64
	}
	all := make([]nb, len(m.X))
	for i, x := range m.X {
		var s float64
		for j, v := range x {
			e := v - y[j]
			s += e * e
		}
		all[i] = nb{i, math.Sqrt(s)}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].d < all[b].d })
	k := min(m.K, len(all))
	out := make([]float64, len(m.Prior))
	for _, n := range all[:k] {
		for _, l := range m.Labels[n.i] {
			out[l] += (1 + 1e-3/(1+n.d)) / float64(k)
		}
	}
	for c := range out {
		out[c] += 1e-6 * m.Prior[c]
	}
	return out
}

// threshold is the vote fraction at which a class is predicted.
const knnThreshold = 0.5

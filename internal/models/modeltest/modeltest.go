// Package modeltest holds data helpers shared by the models' tests.
package modeltest

import (
	"math"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// Seq returns lo, lo+1, …, hi−1: bag indices for Dataset.Subset.
func Seq(lo, hi int) []int {
	s := make([]int, hi-lo)
	for i := range s {
		s[i] = lo + i
	}
	return s
}

// NonNegative returns a copy of ds with every feature v replaced by |v + 1|,
// for kernels defined on non-negative features (chi-squared). ds is not
// modified.
func NonNegative(ds *mil.Dataset) *mil.Dataset {
	out := *ds
	out.Bags = make([]mil.Bag, len(ds.Bags))
	for i, b := range ds.Bags {
		b.Instances = make([][]float64, len(ds.Bags[i].Instances))
		for j, x := range ds.Bags[i].Instances {
			b.Instances[j] = make([]float64, len(x))
			for t, v := range x {
				b.Instances[j][t] = math.Abs(v + 1)
			}
		}
		out.Bags[i] = b
	}
	return &out
}

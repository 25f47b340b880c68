// Package modeltest holds data helpers shared by the models' tests.
package modeltest

import (
	"context"
	"math"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
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

// InductiveAccuracy annotates every bag with its label set hidden (copies:
// bags is not modified) and returns the fraction of instances whose
// predicted label equals their true instance label. It fails t on an
// annotation error.
func InductiveAccuracy(t testing.TB, m models.Model, bags []mil.Bag) float64 {
	t.Helper()
	return accuracy(t, m, bags, models.Inductive)
}

// TransductiveAccuracy is InductiveAccuracy with every bag's label set
// known (models.Transductive).
func TransductiveAccuracy(t testing.TB, m models.Model, bags []mil.Bag) float64 {
	t.Helper()
	return accuracy(t, m, bags, models.Transductive)
}

func accuracy(t testing.TB, m models.Model, bags []mil.Bag, mode models.Mode) float64 {
	t.Helper()
	right, total := 0, 0
	for i := range bags {
		b := bags[i]
		if mode == models.Inductive {
			b.Labels = nil
		}
		a, err := m.Annotate(context.Background(), &b, mode)
		if err != nil {
			t.Fatalf("bag %s: %v", b.ID, err)
		}
		for j, y := range b.InstanceLabels {
			if a.InstanceLabels[j] == y {
				right++
			}
			total++
		}
	}
	if total == 0 {
		t.Fatal("no labeled instance to score")
	}
	return float64(right) / float64(total)
}

// Rescaled returns a copy of d whose feature j is multiplied by 1e4·(j+1)
// and shifted by 1e5·(j−1): features on very different, large scales, for
// checking that a model's feature transform makes it scale-invariant.
func Rescaled(d *mil.Dataset) *mil.Dataset {
	out := *d
	out.Bags = make([]mil.Bag, len(d.Bags))
	for i, b := range d.Bags {
		b.Instances = make([][]float64, len(d.Bags[i].Instances))
		for k, x := range d.Bags[i].Instances {
			y := make([]float64, len(x))
			for j, v := range x {
				y[j] = v*1e4*float64(j+1) + 1e5*float64(j-1)
			}
			b.Instances[k] = y
		}
		out.Bags[i] = b
	}
	return &out
}

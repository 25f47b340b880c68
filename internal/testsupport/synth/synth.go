// Package synth generates the synthetic data sets used to check the metric
// learning models: the toy clustering problem of Law et al. (CVPR 2016,
// Tables 1-3, after the authors' demo.m) and MIML bag collections of any size
// shaped like MSCV2, for scaling benchmarks.
package synth

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// Toy describes one setting of the MLCA toy problem: three categories in
// three dimensions, each made of two Gaussian sub-clusters placed so that the
// sub-clusters of one category are farther apart (Euclidean) than
// sub-clusters of different categories. Euclidean k-means therefore splits
// the data along the wrong axis.
type Toy struct {
	// Sizes[c][s] is the number of points of sub-cluster s of category c.
	Sizes [3][2]int
	// Sigma is the standard deviation of the isotropic Gaussian noise.
	Sigma float64
}

// toyCentres are the sub-cluster centres of demo.m (space = 6, double_space = 60).
var toyCentres = [3][2][3]float64{
	{{-6, 0, 0}, {0, 60, 0}},
	{{6, 0, 0}, {6, 60, 0}},
	{{3, 60, 6}, {-6, 0, 6}},
}

const toyT = 500

// ToyTable returns the training setting of Table 1, 2 or 3 of the MLCA paper:
// 1 = equal sizes with noise (sigma 1), 2 = sizes 1000/2000/4000 with noise,
// 3 = sizes 1000/2000/4000 without noise (sigma 0.5).
func ToyTable(table int) (Toy, error) {
	same := [3][2]int{{toyT, toyT}, {toyT, toyT}, {toyT, toyT}}
	diff := [3][2]int{{toyT, toyT}, {2 * toyT, 2 * toyT}, {4 * toyT, 4 * toyT}}
	switch table {
	case 1:
		return Toy{Sizes: same, Sigma: 1}, nil
	case 2:
		return Toy{Sizes: diff, Sigma: 1}, nil
	case 3:
		return Toy{Sizes: diff, Sigma: 0.5}, nil
	}
	return Toy{}, fmt.Errorf("synth: no toy table %d (want 1, 2 or 3)", table)
}

// ToyTest returns the test setting that goes with a training setting: 1000
// points per sub-cluster with the same noise, as in demo.m.
func (t Toy) ToyTest() Toy {
	return Toy{Sizes: [3][2]int{{2 * toyT, 2 * toyT}, {2 * toyT, 2 * toyT}, {2 * toyT, 2 * toyT}}, Sigma: t.Sigma}
}

// Generate draws the points (rows, 3 columns) and their category (0..2).
func (t Toy) Generate(rng *rand.Rand) ([][]float64, []int) {
	var xs [][]float64
	var labels []int
	for c := range t.Sizes {
		for s, n := range t.Sizes[c] {
			centre := toyCentres[c][s]
			for range n {
				x := make([]float64, 3)
				for j := range x {
					x[j] = centre[j] + t.Sigma*rng.NormFloat64()
				}
				xs = append(xs, x)
				labels = append(labels, c)
			}
		}
	}
	return xs, labels
}

// MIML describes a synthetic multi-instance multi-label collection: each class
// is a Gaussian blob; a bag draws a few classes and one to a few instances of
// each, plus background instances of a class outside its label set with
// probability Clutter (so the weak labels are not trivially recoverable).
type MIML struct {
	Bags    int
	Dim     int
	Classes int
	// MaxLabels bounds the label set size of a bag (drawn uniformly in 1..MaxLabels).
	MaxLabels int
	// MaxPerLabel bounds the instances drawn per label (uniform in 1..MaxPerLabel).
	MaxPerLabel int
	// Spread is the standard deviation of the instances around their class
	// centre; the centres are uniform in the unit cube.
	Spread float64
}

// MSCV2Like returns a generator shaped like MSCV2 (591 bags, about 1770
// instances of dimension 48, 23 classes) scaled by factor in bag count.
func MSCV2Like(factor int) MIML {
	return MIML{Bags: 591 * factor, Dim: 48, Classes: 23, MaxLabels: 3, MaxPerLabel: 2, Spread: 0.15}
}

// Generate draws the data set. Bag labels are the union of the instance
// labels; instance labels are kept for evaluation.
func (g MIML) Generate(rng *rand.Rand) (*mil.Dataset, error) {
	if g.Bags <= 0 || g.Dim <= 0 || g.Classes <= 0 || g.MaxLabels <= 0 || g.MaxPerLabel <= 0 {
		return nil, fmt.Errorf("synth: invalid MIML generator %+v", g)
	}
	if g.MaxLabels > g.Classes {
		return nil, fmt.Errorf("synth: MaxLabels %d exceeds Classes %d", g.MaxLabels, g.Classes)
	}
	centres := make([][]float64, g.Classes)
	for c := range centres {
		centres[c] = make([]float64, g.Dim)
		for j := range centres[c] {
			centres[c][j] = rng.Float64()
		}
	}
	ds := &mil.Dataset{Name: "synthetic-miml", Dim: g.Dim, Classes: make([]string, g.Classes)}
	for c := range ds.Classes {
		ds.Classes[c] = fmt.Sprintf("class%d", c)
	}
	ds.Bags = make([]mil.Bag, g.Bags)
	for i := range ds.Bags {
		perm := rng.Perm(g.Classes)
		labels := perm[:1+rng.IntN(g.MaxLabels)]
		slices.Sort(labels)
		b := mil.Bag{ID: fmt.Sprintf("bag%d", i), Labels: append([]int(nil), labels...)}
		for _, c := range labels {
			for range 1 + rng.IntN(g.MaxPerLabel) {
				x := make([]float64, g.Dim)
				for j := range x {
					x[j] = centres[c][j] + g.Spread*rng.NormFloat64()
				}
				b.Instances = append(b.Instances, x)
				b.InstanceLabels = append(b.InstanceLabels, c)
			}
		}
		ds.Bags[i] = b
	}
	return ds, nil
}

// Blobs describes small MIML data sets for unit tests of bag-level models:
// Classes centres with coordinates drawn from N(0, CentreScale²), bags of
// 1..MaxInstances instances, each of a uniformly drawn class at unit
// Gaussian noise around its centre, and bag labels the union of the
// instance classes (the ORed model's own generative story), in class order.
// The instance labels are kept for evaluation.
type Blobs struct {
	Bags, Classes, Dim, MaxInstances int
	CentreScale                      float64
}

// Generate draws the data set from rng. The draws are, in order: the
// centres, then per bag its size and per instance its class and noise, so
// a given seed yields the same bags whatever is done with them.
func (g Blobs) Generate(rng *rand.Rand) *mil.Dataset {
	centres := make([][]float64, g.Classes)
	for c := range centres {
		centres[c] = make([]float64, g.Dim)
		for j := range centres[c] {
			centres[c][j] = g.CentreScale * rng.NormFloat64()
		}
	}
	ds := &mil.Dataset{Name: "blobs", Dim: g.Dim}
	for c := range g.Classes {
		ds.Classes = append(ds.Classes, fmt.Sprintf("c%d", c))
	}
	for b := range g.Bags {
		bag := mil.Bag{ID: fmt.Sprintf("b%d", b), Labels: []int{}}
		seen := make([]bool, g.Classes)
		for range 1 + rng.IntN(g.MaxInstances) {
			y := rng.IntN(g.Classes)
			x := make([]float64, g.Dim)
			for j := range x {
				x[j] = centres[y][j] + rng.NormFloat64()
			}
			bag.Instances = append(bag.Instances, x)
			bag.InstanceLabels = append(bag.InstanceLabels, y)
			seen[y] = true
		}
		for c, ok := range seen {
			if ok {
				bag.Labels = append(bag.Labels, c)
			}
		}
		ds.Bags = append(ds.Bags, bag)
	}
	return ds
}

package mimlca

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"gonum.org/v1/gonum/mat"
)

// TestCoverAssignmentMatchesEnumeration holds the assignment step with
// cover=true to an enumeration of every assignment of a bag's instances
// (a label or none each) with each label on at least one and at most
// min(capacity, n) instances and min(n, |labels|·min(capacity, n))
// instances assigned: the same least cost, for capacities 2, 3 (the
// Hungarian algorithm with each label's first copy made cheaper) and 9
// (Cover, every instance assigned), and every label on an instance.
func TestCoverAssignmentMatchesEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const k, s = 5, 3
	for _, capacity := range []int{2, 3, 9} {
		t.Run(fmt.Sprintf("capacity=%d", capacity), func(t *testing.T) {
			for trial := range 300 {
				nl := 1 + rng.IntN(3)
				n := nl + rng.IntN(5-nl)
				labels := rng.Perm(k)[:nl]
				u := mat.NewDense(n, s, nil)
				z := mat.NewDense(k, s, nil)
				for _, m := range []*mat.Dense{u, z} {
					r, c := m.Dims()
					for i := range r {
						for j := range c {
							m.Set(i, j, rng.NormFloat64())
						}
					}
				}
				h := make([]int, n)
				cost := make([]float64, 1)
				if _, err := assignRange(u, z, []Bag{{Start: 0, N: n, Labels: labels}}, h, cost, capacity, true); err != nil {
					t.Fatal(err)
				}
				per := min(capacity, n)
				want := min(n, nl*per)
				best := math.Inf(1)
				y := make([]int, n) // index into labels, or -1
				var walk func(i int)
				walk = func(i int) {
					if i == n {
						count := make([]int, nl)
						assigned, c := 0, 0.0
						for j, t := range y {
							if t >= 0 {
								count[t]++
								assigned++
								c += sqDist(u.RawRowView(j), z.RawRowView(labels[t]))
							}
						}
						if assigned != want || slices.Contains(count, 0) || slices.Max(count) > per {
							return
						}
						best = min(best, c)
						return
					}
					for t := -1; t < nl; t++ {
						y[i] = t
						walk(i + 1)
					}
				}
				walk(0)
				got := 0.0
				for j, c := range h {
					if c >= 0 {
						got += sqDist(u.RawRowView(j), z.RawRowView(c))
					}
				}
				for _, c := range labels {
					if !slices.Contains(h, c) {
						t.Fatalf("trial %d: label %d on no instance: %v", trial, c, h)
					}
				}
				if math.Abs(got-best) > 1e-9 || math.Abs(cost[0]-best) > 1e-9 {
					t.Fatalf("trial %d (n=%d, %d labels): assignment costs %v (reported %v), enumeration %v", trial, n, nl, got, cost[0], best)
				}
			}
		})
	}
}

// TestTransductiveCoversBagLabels fits MIMLCA on bags whose second class
// always comes with the first and annotates them transductively: every
// bag label is on some instance, and the labeling is the least-cost one
// that is so, by enumeration over the bag's labels.
func TestTransductiveCoversBagLabels(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	d := &mil.Dataset{Name: "cooccur", Classes: []string{"grass", "cow", "sky"}, Dim: 3}
	centre := [][]float64{{0, 0, 0}, {1.2, 0, 0}, {0, 3, 0}}
	for i := range 60 {
		b := mil.Bag{ID: fmt.Sprint(i)}
		classes := []int{0, 1}
		if i%3 == 0 {
			classes = []int{0, 2}
		}
		b.Labels = classes
		for j := range 4 + rng.IntN(3) {
			c := classes[0]
			if j == 0 {
				c = classes[1]
			}
			x := make([]float64, 3)
			for f := range x {
				x[f] = centre[c][f] + 0.8*rng.NormFloat64()
			}
			b.Instances = append(b.Instances, x)
		}
		d.Bags = append(d.Bags, b)
	}
	m, _, err := Fit(context.Background(), d, models.FitOptions{Seed: 1, Workers: 1, Params: models.Params{"select": "none", "capacity": "9"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.Bags {
		b := &d.Bags[i]
		a, err := m.Annotate(context.Background(), b, models.Transductive)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range b.Labels {
			if !slices.Contains(a.InstanceLabels, c) {
				t.Fatalf("bag %s: label %d on no instance: %v", b.ID, c, a.InstanceLabels)
			}
		}
		score := func(y []int) float64 {
			s := 0.0
			for j, c := range y {
				s += a.InstanceScores[j][c]
			}
			return s
		}
		best := math.Inf(-1)
		y := make([]int, b.Len())
		var walk func(j int)
		walk = func(j int) {
			if j == len(y) {
				for _, c := range b.Labels {
					if !slices.Contains(y, c) {
						return
					}
				}
				best = max(best, score(y))
				return
			}
			for _, c := range b.Labels {
				y[j] = c
				walk(j + 1)
			}
		}
		walk(0)
		if got := score(a.InstanceLabels); math.Abs(got-best) > 1e-9*math.Max(1, math.Abs(best)) {
			t.Fatalf("bag %s: labeling scores %v, enumeration's best %v", b.ID, got, best)
		}
	}
}

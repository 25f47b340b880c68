package mier

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// TestHolisticBag: with holistic=bag the model reads the bag's own whole
// vector. The instances here are the same noise in every class, the
// holistic vectors carry the class, so only a model that reads them labels
// held-out bags right; the mean of the instances (the default) cannot.
func TestHolisticBag(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	mk := func(n int) *mil.Dataset {
		d := &mil.Dataset{Classes: []string{"a", "b"}, Dim: 3}
		for i := range n {
			c := i % 2
			b := mil.Bag{ID: string(rune('A' + i%26)), Labels: []int{c}}
			for range 3 {
				b.Instances = append(b.Instances, []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()})
			}
			b.Holistic = []float64{float64(4*c) + rng.NormFloat64()*0.1, rng.NormFloat64(), 0}
			d.Bags = append(d.Bags, b)
		}
		return d
	}
	train, test := mk(40), mk(20)
	for _, tc := range []struct {
		holistic string
		min, max float64
	}{{HolisticBag, 1, 1}, {HolisticMean, 0, 0.8}} {
		m, err := Fit(context.Background(), train, models.FitOptions{Seed: 1,
			Params: models.Params{"mode": "none", "classifier": "knn", "holistic": tc.holistic}})
		if err != nil {
			t.Fatal(err)
		}
		right := 0
		for i := range test.Bags {
			b := test.Bags[i]
			q := mil.Bag{ID: b.ID, Instances: b.Instances, Holistic: b.Holistic}
			a, err := m.Annotate(context.Background(), &q, models.Inductive)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(a.BagLabels, b.Labels) {
				right++
			}
		}
		if acc := float64(right) / float64(len(test.Bags)); acc < tc.min || acc > tc.max {
			t.Errorf("holistic=%s: %.2f of held-out bags right, want [%v, %v]", tc.holistic, acc, tc.min, tc.max)
		}
	}
	m, err := Fit(context.Background(), train, models.FitOptions{Seed: 1, Params: models.Params{"mode": "none", "classifier": "knn", "holistic": HolisticBag}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Annotate(context.Background(), &mil.Bag{ID: "x", Instances: train.Bags[0].Instances}, models.Inductive); !errors.Is(err, models.ErrBadInput) {
		t.Fatalf("a bag without a holistic vector: %v, want ErrBadInput", err)
	}
}

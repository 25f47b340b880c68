package measure

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/evaltest"
)

// echoBags returns n bags for the echo model (features are class scores over
// 3 classes), with labels and instance labels that the queries must not see.
func echoBags(n int) (*mil.Dataset, []*mil.Bag) {
	d := &mil.Dataset{Name: "echo", Classes: []string{"a", "b", "c"}, Dim: 3}
	for i := range n {
		x := float64(i%5) / 5
		d.Bags = append(d.Bags, mil.Bag{ID: fmt.Sprint("b", i), Labels: []int{i % 3}, InstanceLabels: []int{i % 3, 2},
			Instances: [][]float64{{x, 1 - x, 0.3}, {0.1, 0.2, x}}})
	}
	bags := make([]*mil.Bag, n)
	for i := range d.Bags {
		bags[i] = &d.Bags[i]
	}
	return d, bags
}

// TestPredictMatchesSequentialAnnotation checks Predict against annotating
// each stripped copy in order, whatever the number of workers: the echo model
// refuses a query carrying instance labels, or a label set in inductive mode.
func TestPredictMatchesSequentialAnnotation(t *testing.T) {
	d, bags := echoBags(23)
	m, err := evaltest.Echo(nil, "").Fit(context.Background(), d, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []models.Mode{models.Inductive, models.Transductive} {
		want := make([]Prediction, len(bags))
		for i, b := range bags {
			q := mil.Bag{ID: b.ID, Instances: b.Instances}
			if mode == models.Transductive {
				q.Labels = b.Labels
			}
			a, err := m.Annotate(context.Background(), &q, mode)
			if err != nil {
				t.Fatal(err)
			}
			want[i] = Prediction{InstanceLabels: a.InstanceLabels, BagLabels: a.BagLabels, BagScores: a.BagScores}
		}
		for _, workers := range []int{0, 1, 3, 100} {
			got, err := Predict(context.Background(), m, bags, mode, workers)
			if err != nil {
				t.Fatalf("%s, %d workers: %v", mode, workers, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, %d workers: predictions differ from sequential annotation", mode, workers)
			}
		}
		acc := NewAccumulator(3)
		for i, b := range bags {
			if err := acc.Add(b, want[i]); err != nil {
				t.Fatal(err)
			}
		}
		got, err := Score(3, bags, want)
		if err != nil || !reflect.DeepEqual(got.Values(), acc.Result().Values()) {
			t.Fatalf("Score = %v, %v; accumulator gives %v", got.Values(), err, acc.Result().Values())
		}
	}
}

func TestPredictReportsFirstFailingBag(t *testing.T) {
	d, bags := echoBags(12)
	m, err := evaltest.Echo(nil, "b7").Fit(context.Background(), d, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 4} {
		_, err := Predict(context.Background(), m, bags, models.Inductive, workers)
		if !errors.Is(err, models.ErrBadInput) || !strings.Contains(err.Error(), `annotate bag "b7"`) {
			t.Errorf("%d workers: error %v, want bag b7 wrapping ErrBadInput", workers, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Predict(ctx, m, bags, models.Inductive, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: error %v", err)
	}
	if _, err := Score(3, bags, make([]Prediction, 2)); !errors.Is(err, ErrInvalid) {
		t.Errorf("Score with 2 predictions for 12 bags: %v", err)
	}
}

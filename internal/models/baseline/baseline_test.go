package baseline

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/modeltest"
	"github.com/mimlstream/mimlstream/internal/testsupport/synth"
)

// separable draws bags from well-separated Gaussian class centres with bag
// labels the union of the instance labels (synth.Blobs).
func separable(seed uint64, bags, classes, dim int) *mil.Dataset {
	g := synth.Blobs{Bags: bags, Classes: classes, Dim: dim, MaxInstances: 4, CentreScale: 4}
	return g.Generate(rand.New(rand.NewPCG(seed, 2)))
}

func TestSLRLearnsSupervised(t *testing.T) {
	train, test := separable(1, 120, 4, 3), separable(1, 160, 4, 3)
	m, err := FitSLR(context.Background(), train, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if acc := modeltest.InductiveAccuracy(t, m, test.Bags[120:]); acc < 0.95 {
		t.Errorf("held-out accuracy %.3f on separable classes", acc)
	}
}

func TestSLRTransductiveStaysInBagLabel(t *testing.T) {
	d := separable(2, 60, 5, 2)
	m, err := FitSLR(context.Background(), d, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.Bags {
		b := &d.Bags[i]
		a, err := m.Annotate(context.Background(), b, models.Transductive)
		if err != nil {
			t.Fatal(err)
		}
		for j, y := range a.InstanceLabels {
			if !b.HasLabel(y) {
				t.Fatalf("instance %d labelled %d outside %v", j, y, b.Labels)
			}
			s := 0.0
			for _, p := range a.InstanceScores[j] {
				s += p
			}
			if math.Abs(s-1) > 1e-12 {
				t.Fatalf("scores sum to %v", s)
			}
		}
	}
}

func TestSLRNeedsInstanceLabels(t *testing.T) {
	d := separable(3, 10, 2, 2)
	for i := range d.Bags {
		d.Bags[i].InstanceLabels = nil
	}
	if _, err := FitSLR(context.Background(), d, models.FitOptions{}); !errors.Is(err, models.ErrBadInput) {
		t.Errorf("error %v, want ErrBadInput", err)
	}
}

// The dummy's outputs are fixed by counts; check them on a hand-made set.
func TestDummy(t *testing.T) {
	d := &mil.Dataset{Classes: []string{"a", "b", "c"}, Dim: 1, Bags: []mil.Bag{
		{ID: "1", Instances: [][]float64{{0}, {0}, {0}}, Labels: []int{0, 1}, InstanceLabels: []int{1, 1, 0}},
		{ID: "2", Instances: [][]float64{{0}, {0}}, Labels: []int{1, 2}, InstanceLabels: []int{2, 1}},
		{ID: "3", Instances: [][]float64{{0}}, Labels: []int{2}, InstanceLabels: []int{2}},
	}}
	m, err := FitDummy(context.Background(), d, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		labels     []int
		mode       models.Mode
		wantLabel  int
		wantScores []float64
		wantBag    []float64
	}{
		// Instances: a 1, b 3, c 2 of 6; bags: a 1/3, b 2/3, c 2/3.
		{"inductive", nil, models.Inductive, 1, []float64{1.0 / 6, 3.0 / 6, 2.0 / 6}, []float64{1.0 / 3, 2.0 / 3, 2.0 / 3}},
		{"transductive", []int{0, 2}, models.Transductive, 2, []float64{1.0 / 3, 0, 2.0 / 3}, []float64{1.0 / 3, 0, 2.0 / 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mil.Bag{Instances: [][]float64{{5}, {-3}}, Labels: tc.labels}
			a, err := m.Annotate(context.Background(), &b, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a.InstanceLabels, []int{tc.wantLabel, tc.wantLabel}) {
				t.Errorf("instance labels %v, want %d", a.InstanceLabels, tc.wantLabel)
			}
			if !reflect.DeepEqual(a.BagLabels, []int{tc.wantLabel}) {
				t.Errorf("bag labels %v", a.BagLabels)
			}
			for c := range tc.wantScores {
				if math.Abs(a.InstanceScores[0][c]-tc.wantScores[c]) > 1e-12 || math.Abs(a.BagScores[c]-tc.wantBag[c]) > 1e-12 {
					t.Errorf("scores %v / bag %v, want %v / %v", a.InstanceScores[0], a.BagScores, tc.wantScores, tc.wantBag)
				}
			}
		})
	}
}

func TestRoundTripAndBadInput(t *testing.T) {
	d := separable(4, 40, 3, 2)
	reg := models.NewRegistry(SLRKind(), DummyKind())
	for _, k := range []models.Kind{SLRKind(), DummyKind()} {
		m, err := k.Fit(context.Background(), d, models.FitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		blob, err := models.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := reg.Decode(blob)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []models.Mode{models.Inductive, models.Transductive} {
			a1, _ := m.Annotate(context.Background(), &d.Bags[0], mode)
			a2, err := back.Annotate(context.Background(), &d.Bags[0], mode)
			if err != nil || !reflect.DeepEqual(a1, a2) {
				t.Errorf("%s %s: decoded model differs (%v)", k.Name, mode, err)
			}
		}
		bad := []mil.Bag{
			{Instances: [][]float64{{1, 2, 3}}},
			{Instances: [][]float64{{math.Inf(1), 0}}},
		}
		for _, b := range bad {
			if _, err := m.Annotate(context.Background(), &b, models.Inductive); !errors.Is(err, models.ErrBadInput) {
				t.Errorf("%s: error %v, want ErrBadInput", k.Name, err)
			}
		}
		nolabel := mil.Bag{Instances: [][]float64{{1, 2}}}
		if _, err := m.Annotate(context.Background(), &nolabel, models.Transductive); !errors.Is(err, models.ErrBadInput) {
			t.Errorf("%s: transductive without label: %v", k.Name, err)
		}
	}
}

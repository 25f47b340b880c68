package ovr

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

func TestBagScore(t *testing.T) {
	tests := []struct {
		rule  Rule
		s     []float64
		score float64
		pos   bool
	}{
		{MinMax, []float64{2, -1}, 2, true},   // M + m = 1
		{MinMax, []float64{1, -3}, -3, false}, // M + m = −2: the negative instance dominates
		{MinMax, []float64{-0.5, -0.2}, -0.5, false},
		{MinMax, []float64{1, -1}, 1, true}, // tie goes positive with f = M
		{MinMax, []float64{0.3}, 0.3, true}, // one instance: sign(2x)
		{Max, []float64{1, -3}, 1, true},
		{Max, []float64{-1, -3}, -1, false},
		{Max, []float64{0, -3}, 0, false},
	}
	for _, tc := range tests {
		score, pos := tc.rule.BagScore(tc.s)
		if score != tc.score || pos != tc.pos {
			t.Errorf("%s %v: (%v, %v), want (%v, %v)", tc.rule, tc.s, score, pos, tc.score, tc.pos)
		}
	}
}

func TestScaler(t *testing.T) {
	rows := [][]float64{{1, 5}, {3, 5}, {5, 5}}
	s := FitScaler(rows, 2)
	z := s.Apply(make([]float64, 2), []float64{3, 7})
	if math.Abs(z[0]) > 1e-12 || math.Abs(z[1]-2) > 1e-12 { // constant feature: centred, scale 1
		t.Errorf("z = %v", z)
	}
	want := math.Sqrt(8.0 / 3)
	if math.Abs(s.Scale[0]-want) > 1e-12 {
		t.Errorf("scale %v, want %v", s.Scale[0], want)
	}
}

func TestScorerRBF(t *testing.T) {
	sc := Scorer{SV: [][]float64{{0, 0}, {1, 0}}, Beta: []float64{2, -1}, Gamma: 0.5, B: 0.25}
	z := []float64{1, 1}
	want := 0.25 + 2*math.Exp(-0.5*2) - math.Exp(-0.5*1)
	if got := sc.Score(z); math.Abs(got-want) > 1e-12 {
		t.Errorf("score %v, want %v", got, want)
	}
}

func TestNewRejectsInconsistentState(t *testing.T) {
	meta := models.Meta{Kind: "x", Classes: []string{"a"}, Dim: 2}
	sc := Scaler{Mean: []float64{0, 0}, Scale: []float64{1, 1}}
	tests := []struct {
		name string
		st   State
	}{
		{"rule", State{Rule: "avg", Scaler: sc, Scorers: []Scorer{{W: []float64{1, 1}}}}},
		{"classes", State{Rule: Max, Scaler: sc}},
		{"weights", State{Rule: Max, Scaler: sc, Scorers: []Scorer{{W: []float64{1}}}}},
		{"gamma", State{Rule: Max, Scaler: sc, Scorers: []Scorer{{SV: [][]float64{{1, 1}}, Beta: []float64{1}}}}},
		{"scaler", State{Rule: Max, Scaler: Scaler{}, Scorers: []Scorer{{W: []float64{1, 1}}}}},
	}
	for _, tc := range tests {
		if _, err := New(meta, tc.st); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

func TestAnnotateInstanceLabels(t *testing.T) {
	meta := models.Meta{Kind: "x", Classes: []string{"a", "b", "c"}, Dim: 1}
	// Scores: class a = x, class b = −x, class c = −10 (never predicted).
	m, err := New(meta, State{Rule: Max, Scaler: Scaler{Mean: []float64{0}, Scale: []float64{1}},
		Scorers: []Scorer{{W: []float64{1}}, {W: []float64{-1}}, {W: []float64{0}, B: -10}}})
	if err != nil {
		t.Fatal(err)
	}
	b := mil.Bag{Instances: [][]float64{{2}, {-1}}, Labels: []int{2}}
	ann, err := m.Annotate(context.Background(), &b, models.Inductive)
	if err != nil {
		t.Fatal(err)
	}
	if len(ann.BagLabels) != 2 || ann.BagLabels[0] != 0 || ann.BagLabels[1] != 1 {
		t.Fatalf("bag labels %v", ann.BagLabels)
	}
	if ann.InstanceLabels[0] != 0 || ann.InstanceLabels[1] != 1 {
		t.Errorf("inductive instance labels %v", ann.InstanceLabels)
	}
	ann, _ = m.Annotate(context.Background(), &b, models.Transductive)
	if ann.InstanceLabels[0] != 2 || ann.InstanceLabels[1] != 2 {
		t.Errorf("transductive instance labels %v, want the bag's only label", ann.InstanceLabels)
	}
	neg := mil.Bag{Instances: [][]float64{{0}}, Labels: []int{}}
	ann, _ = m.Annotate(context.Background(), &neg, models.Transductive)
	if ann.InstanceLabels[0] != mil.Unlabeled {
		t.Errorf("known-negative bag: instance label %d", ann.InstanceLabels[0])
	}
}

func TestParallel(t *testing.T) {
	out := make([]int, 100)
	if err := Parallel(context.Background(), 3, 100, func(_ context.Context, i int) error {
		out[i] = i * i
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, v := range out {
		if v != i*i {
			t.Fatalf("out[%d] = %d", i, v)
		}
	}
	boom := errors.New("boom")
	var calls atomic.Int32
	err := Parallel(context.Background(), 2, 1000, func(ctx context.Context, i int) error {
		calls.Add(1)
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
	if calls.Load() == 1000 {
		t.Error("no early stop after an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Parallel(ctx, 2, 10, func(context.Context, int) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

func TestSeedDistinct(t *testing.T) {
	seen := map[uint64]bool{}
	for c := range 20 {
		for f := range 20 {
			s := Seed(1, c, f)
			if seen[s] {
				t.Fatalf("seed collision at %d/%d", c, f)
			}
			seen[s] = true
		}
	}
	if Seed(1, 2) == Seed(2, 2) || Seed(1, 2, 3) == Seed(1, 3, 2) {
		t.Error("seeds ignore the base or the order")
	}
}

package ovr

import (
	"context"
	"errors"
	"math"
	"strings"
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
	s, err := FitScaler(ScaleZScore, rows, 2)
	if err != nil {
		t.Fatal(err)
	}
	z := s.Apply(make([]float64, 2), []float64{3, 7})
	if math.Abs(z[0]) > 1e-12 || math.Abs(z[1]-2) > 1e-12 { // constant feature: centred, scale 1
		t.Errorf("z = %v", z)
	}
	want := math.Sqrt(8.0 / 3)
	if math.Abs(s.Scale[0]-want) > 1e-12 {
		t.Errorf("scale %v, want %v", s.Scale[0], want)
	}
}

// TestScorerPoly: the polynomial scorer is (γ⟨x, z⟩ + c)^p summed with its
// coefficients; it catches a kernel switch that falls back to the RBF form
// and a decoded state whose degree or kind is unusable.
func TestScorerPoly(t *testing.T) {
	sc := Scorer{SV: [][]float64{{1, 2}, {0, 1}}, Beta: []float64{0.5, -2}, Gamma: 0.5, Kernel: KernelPoly, Degree: 3, Coef0: 1, B: 0.1}
	z := []float64{2, -1}
	want := 0.1 + 0.5*math.Pow(0.5*0+1, 3) - 2*math.Pow(0.5*(-1)+1, 3)
	if got := sc.Score(z); math.Abs(got-want) > 1e-12 {
		t.Errorf("score %v, want %v", got, want)
	}
	if err := sc.validate(2); err != nil {
		t.Errorf("valid poly scorer refused: %v", err)
	}
	for _, bad := range []Scorer{
		{SV: sc.SV, Beta: sc.Beta, Gamma: 1, Kernel: KernelPoly, Degree: 0},
		{SV: sc.SV, Beta: sc.Beta, Gamma: 1, Kernel: "sigmoid", Degree: 2},
	} {
		if err := bad.validate(2); err == nil {
			t.Errorf("scorer %+v accepted", bad)
		}
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

func TestScalerModes(t *testing.T) {
	// Feature 0 ranges over 1..5, feature 1 is constant.
	rows := [][]float64{{1, 5}, {3, 5}, {5, 5}}
	sd := math.Sqrt(8.0 / 3)
	zx := []float64{(4 - 3) / sd, 7 - 5} // z-score of x = (4, 7); constant feature only centred
	zn := math.Hypot(zx[0], zx[1])
	tests := []struct {
		mode Scaling
		x    []float64
		want []float64
	}{
		{ScaleZScore, []float64{4, 7}, zx},
		{"", []float64{4, 7}, zx}, // the empty mode is the default
		{ScaleNone, []float64{4, 7}, []float64{4, 7}},
		{ScaleUnit, []float64{3, 4}, []float64{0.6, 0.8}},
		{ScaleUnit, []float64{0, 0}, []float64{0, 0}}, // zero vector left as is
		{ScaleZUnit, []float64{4, 7}, []float64{zx[0] / zn, zx[1] / zn}},
		{ScaleZUnit, []float64{3, 5}, []float64{0, 0}},      // the mean maps to zero, not NaN
		{ScaleMinMax, []float64{4, 7}, []float64{0.75, 2}},  // constant feature: shifted by its value, scale 1
		{ScaleMinMax, []float64{0, 5}, []float64{-0.25, 0}}, // unseen values may leave [0, 1]
	}
	for _, tc := range tests {
		s, err := FitScaler(tc.mode, rows, 2)
		if err != nil {
			t.Fatalf("%q: %v", tc.mode, err)
		}
		got := s.Apply(make([]float64, 2), tc.x)
		for j := range got {
			if math.Abs(got[j]-tc.want[j]) > 1e-12 {
				t.Errorf("%q %v: got %v, want %v", tc.mode, tc.x, got, tc.want)
				break
			}
		}
	}
	if _, err := FitScaler("l2", rows, 2); err == nil {
		t.Error("unknown mode accepted")
	}
	// The training rows themselves: minmax spans [0, 1] on a varying feature.
	s, _ := FitScaler(ScaleMinMax, rows, 2)
	if lo, hi := s.Apply(make([]float64, 2), rows[0])[0], s.Apply(make([]float64, 2), rows[2])[0]; lo != 0 || hi != 1 {
		t.Errorf("minmax of the training extremes: %v, %v", lo, hi)
	}
}

// scaleToy is a two-class multi-label set whose features have very
// different scales, so every mode yields different rows.
func scaleToy() *mil.Dataset {
	ds := &mil.Dataset{Name: "toy", Classes: []string{"a", "b"}, Dim: 3}
	for i := range 6 {
		b := mil.Bag{Labels: []int{i % 2}}
		if i == 5 {
			b.Labels = nil // unlabeled: dropped by Prepare
		}
		for j := range 3 {
			f := float64(i*3 + j)
			b.Instances = append(b.Instances, []float64{100 + 7*f, 0.01 * f * f, -3 + math.Sin(f)})
		}
		ds.Bags = append(ds.Bags, b)
	}
	return ds
}

// TestScalingRoundTrip checks, for every mode, that a model's state
// survives MarshalState/Decode with its scaler mode, and that Annotate
// scores a training bag exactly as the training-time rows of Prepare.
func TestScalingRoundTrip(t *testing.T) {
	ds := scaleToy()
	meta := models.Meta{Kind: "x", Classes: ds.Classes, Dim: ds.Dim}
	for _, mode := range Scalings {
		data, err := Prepare(ds, mode)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if len(data.Bags) != 5 {
			t.Fatalf("%s: %d labeled bags, want 5", mode, len(data.Bags))
		}
		scorers := []Scorer{{W: []float64{0.5, -2, 1}, B: 0.1}, {W: []float64{-1, 3, 0.25}, B: -0.2}}
		m, err := New(meta, State{Rule: Max, Scaler: data.Scaler, Scorers: scorers})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		raw, err := m.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(meta, raw)
		if err != nil {
			t.Fatalf("%s: decode: %v", mode, err)
		}
		if got, _ := ParseScaling(string(back.State().Scaler.Mode)); got != mode {
			t.Errorf("%s: decoded mode %q", mode, back.State().Scaler.Mode)
		}
		for bi, di := range data.BagIndex {
			ann, err := back.Annotate(context.Background(), &ds.Bags[di], models.Inductive)
			if err != nil {
				t.Fatal(err)
			}
			for j, g := range data.Bags[bi] {
				for c, sc := range scorers {
					want := sc.Score(data.Rows[g])
					if got := ann.InstanceScores[j][c]; math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
						t.Errorf("%s bag %d instance %d class %d: annotate %v, training rows %v", mode, di, j, c, got, want)
					}
				}
			}
		}
		if mode.unitNorm() {
			if n := math.Sqrt(dotRow(data.Rows[0], data.Rows[0])); math.Abs(n-1) > 1e-12 {
				t.Errorf("%s: training row norm %v", mode, n)
			}
		}
	}
}

func dotRow(a, b []float64) float64 {
	v := 0.0
	for j := range a {
		v += a[j] * b[j]
	}
	return v
}

// TestScalerStateCompat: a state serialised before the mode field existed
// decodes as a z-score model, the z-score is still written without the
// field, and an unknown mode is rejected rather than silently ignored.
func TestScalerStateCompat(t *testing.T) {
	meta := models.Meta{Kind: "x", Classes: []string{"a"}, Dim: 2}
	old := `{"rule":"max","scaler":{"mean":[1,2],"scale":[2,4]},"scorers":[{"w":[1,1],"b":0}]}`
	m, err := Decode(meta, []byte(old))
	if err != nil {
		t.Fatal(err)
	}
	// z = ((3−1)/2, (6−2)/4) = (1, 1): score 2 (a unit-norm mode would give √2).
	if s := m.InstanceScores(&mil.Bag{Instances: [][]float64{{3, 6}}})[0][0]; math.Abs(s-2) > 1e-12 {
		t.Errorf("old state score %v, want 2", s)
	}
	raw, _ := m.MarshalState()
	if strings.Contains(string(raw), `"mode"`) {
		t.Errorf("z-score state writes a mode: %s", raw)
	}
	bad := strings.Replace(old, `"scaler":{`, `"scaler":{"mode":"l2",`, 1)
	if _, err := Decode(meta, []byte(bad)); err == nil {
		t.Error("unknown scaler mode accepted")
	}
	unit := strings.Replace(old, `"scaler":{`, `"scaler":{"mode":"zunit",`, 1)
	m, err = Decode(meta, []byte(unit))
	if err != nil {
		t.Fatal(err)
	}
	if s := m.InstanceScores(&mil.Bag{Instances: [][]float64{{3, 6}}})[0][0]; math.Abs(s-math.Sqrt2) > 1e-12 {
		t.Errorf("zunit state score %v, want √2", s)
	}
}

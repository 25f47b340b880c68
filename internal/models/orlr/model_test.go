package orlr

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/modeltest"
	"github.com/mimlstream/mimlstream/internal/testsupport/synth"
)

// synthetic draws bags from well-separated Gaussian class centres with bag
// labels the union of the instance labels (synth.Blobs).
func synthetic(seed uint64, bags, classes, dim int) *mil.Dataset {
	g := synth.Blobs{Bags: bags, Classes: classes, Dim: dim, MaxInstances: 5, CentreScale: 3}
	return g.Generate(rand.New(rand.NewPCG(seed, 1)))
}

func fitT(t *testing.T, d *mil.Dataset, opt models.FitOptions) (*Model, *trace) {
	t.Helper()
	m, tr, err := fit(context.Background(), d, opt)
	if err != nil {
		t.Fatal(err)
	}
	return m, tr
}

func TestEMLogLikelihoodNonDecreasing(t *testing.T) {
	tests := []struct {
		name   string
		params models.Params
	}{
		{"linear fas", models.Params{"iters": "30"}},
		{"linear gd, no penalty", models.Params{"iters": "30", "mstep": "gd", "l2": "0"}},
		{"linear forward l2", models.Params{"iters": "30", "estep": "forward", "l2": "0.01"}},
		{"rbf", models.Params{"iters": "20", "kernel": "rbf", "dict_frac": "0.3"}},
		{"one M-step", models.Params{"iters": "30", "msteps": "1"}},
	}
	d := synthetic(1, 60, 4, 3)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, tr := fitT(t, d, models.FitOptions{Seed: 1, Params: tc.params})
			if len(tr.LogLik) < 2 {
				t.Fatalf("trace %v", tr.LogLik)
			}
			// GEM guarantees l(w^(k+1)) − pen(w^(k+1)) >= l(w^(k)) − pen(w^(k))
			// (the log-likelihood itself with l2 = 0); allow rounding.
			obj := tr.Objective
			for k := 1; k < len(obj); k++ {
				if obj[k] < obj[k-1]-1e-9*math.Abs(obj[k-1]) {
					t.Fatalf("penalized log-likelihood decreased at iteration %d: %v -> %v", k, obj[k-1], obj[k])
				}
			}
			if obj[len(obj)-1] <= obj[0] {
				t.Errorf("EM made no progress: %v", obj)
			}
		})
	}
}

func TestLearnsSyntheticInstanceLabels(t *testing.T) {
	train := synthetic(2, 150, 5, 4)
	m, _ := fitT(t, train, models.FitOptions{Seed: 1})
	// Well-separated classes: the weak labels must be enough.
	if acc := modeltest.InductiveAccuracy(t, m, train.Bags); acc < 0.9 {
		t.Errorf("instance accuracy %.3f on separable data, want >= 0.9", acc)
	}
}

func TestTransductiveUsesOnlyBagClasses(t *testing.T) {
	d := synthetic(3, 80, 6, 3)
	m, _ := fitT(t, d, models.FitOptions{Seed: 1, Params: models.Params{"iters": "10"}})
	for i := range d.Bags {
		b := &d.Bags[i]
		a, err := m.Annotate(context.Background(), b, models.Transductive)
		if err != nil {
			t.Fatal(err)
		}
		for j, y := range a.InstanceLabels {
			if !b.HasLabel(y) {
				t.Fatalf("bag %s instance %d labelled %d outside %v", b.ID, j, y, b.Labels)
			}
			s := 0.0
			for c, p := range a.InstanceScores[j] {
				if !b.HasLabel(c) && p != 0 {
					t.Fatalf("bag %s instance %d: score %v for class %d outside the bag label", b.ID, j, p, c)
				}
				s += p
			}
			if math.Abs(s-1) > 1e-12 {
				t.Fatalf("transductive scores sum to %v", s)
			}
		}
		for _, c := range a.BagLabels {
			if !b.HasLabel(c) {
				t.Fatalf("bag label %v not within %v", a.BagLabels, b.Labels)
			}
		}
	}
}

func TestInductiveBagScores(t *testing.T) {
	d := synthetic(4, 40, 3, 2)
	m, _ := fitT(t, d, models.FitOptions{Seed: 1, Params: models.Params{"iters": "5"}})
	a, err := m.Annotate(context.Background(), &d.Bags[0], models.Inductive)
	if err != nil {
		t.Fatal(err)
	}
	for c := range d.Classes {
		absent := 1.0
		for _, p := range a.InstanceScores {
			absent *= 1 - p[c]
		}
		if math.Abs(a.BagScores[c]-(1-absent)) > 1e-12 {
			t.Errorf("bag score %d = %v, want 1-Π(1-p) = %v", c, a.BagScores[c], 1-absent)
		}
	}
	want := map[int]bool{}
	for _, y := range a.InstanceLabels {
		want[y] = true
	}
	if len(a.BagLabels) != len(want) {
		t.Errorf("bag labels %v are not the union of %v", a.BagLabels, a.InstanceLabels)
	}
}

func TestSerializationRoundTrip(t *testing.T) {
	d := synthetic(5, 50, 4, 3)
	reg := models.NewRegistry(Kind())
	for _, kernel := range []string{"linear", "rbf"} {
		t.Run(kernel, func(t *testing.T) {
			m, _ := fitT(t, d, models.FitOptions{Seed: 1, Params: models.Params{"iters": "5", "kernel": kernel, "dict_frac": "0.5"}})
			blob, err := models.Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			back, err := reg.Decode(blob)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Meta(), m.Meta()) {
				t.Errorf("meta %+v, want %+v", back.Meta(), m.Meta())
			}
			for _, mode := range []models.Mode{models.Inductive, models.Transductive} {
				for i := range d.Bags[:10] {
					a1, err1 := m.Annotate(context.Background(), &d.Bags[i], mode)
					a2, err2 := back.Annotate(context.Background(), &d.Bags[i], mode)
					if err1 != nil || err2 != nil {
						t.Fatal(err1, err2)
					}
					if !reflect.DeepEqual(a1, a2) {
						t.Fatalf("%s: decoded model annotates differently", mode)
					}
				}
			}
			if got, want := back.(*Model).FeatureSpace(), m.FeatureSpace(); got != want {
				t.Errorf("feature space %q after decoding, want %q", got, want)
			}
		})
	}
	if _, err := Decode(models.Meta{Classes: []string{"a"}, Dim: 2}, []byte(`{"config":{},"softmax":null}`)); err == nil {
		t.Error("decoding a state without parameters succeeded")
	}
}

func TestAnnotateMappedEqualsAnnotate(t *testing.T) {
	d := synthetic(6, 40, 4, 3)
	for _, kernel := range []string{"linear", "rbf"} {
		m, _ := fitT(t, d, models.FitOptions{Seed: 1, Params: models.Params{"iters": "5", "kernel": kernel}})
		if (m.FeatureSpace() == "") != (kernel == "linear") {
			t.Errorf("%s: feature space %q", kernel, m.FeatureSpace())
		}
		for i := range d.Bags {
			b := &d.Bags[i]
			mapped := make([][]float64, len(b.Instances))
			for j, x := range b.Instances {
				var err error
				if mapped[j], err = m.MapInstance(x); err != nil {
					t.Fatal(err)
				}
			}
			for _, mode := range []models.Mode{models.Inductive, models.Transductive} {
				a1, err1 := m.Annotate(context.Background(), b, mode)
				a2, err2 := m.AnnotateMapped(context.Background(), b, mapped, mode)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !reflect.DeepEqual(a1, a2) {
					t.Fatalf("%s %s: AnnotateMapped differs from Annotate", kernel, mode)
				}
			}
		}
	}
}

func TestLabelSetTooLarge(t *testing.T) {
	d := synthetic(7, 30, 8, 2)
	big := mil.Bag{ID: "big", Labels: []int{0, 1, 2, 3, 4, 5}}
	for c := range 6 {
		big.Instances = append(big.Instances, []float64{float64(c), 1})
	}
	d.Bags = append(d.Bags, big)
	_, err := Fit(context.Background(), d, models.FitOptions{Params: models.Params{"max_labels": "5", "iters": "2"}})
	if !errors.Is(err, models.ErrLabelSetTooLarge) || !errors.Is(err, models.ErrBadInput) {
		t.Fatalf("fit error %v, want ErrLabelSetTooLarge", err)
	}
	// Pruning the most expensive bags removes it before the check.
	if _, err := Fit(context.Background(), d, models.FitOptions{Params: models.Params{"max_labels": "5", "iters": "2", "prune": "0.05"}}); err != nil {
		t.Fatalf("fit with pruning: %v", err)
	}
	m, err := Fit(context.Background(), d, models.FitOptions{Params: models.Params{"max_labels": "6", "iters": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	m.cfg.MaxLabels = 5
	if _, err := m.Annotate(context.Background(), &big, models.Transductive); !errors.Is(err, models.ErrLabelSetTooLarge) {
		t.Errorf("transductive error %v, want ErrLabelSetTooLarge", err)
	}
	if _, err := m.Annotate(context.Background(), &big, models.Inductive); err != nil {
		t.Errorf("inductive annotation must not depend on the label set size: %v", err)
	}
	if _, err := ParseConfig(models.Params{"max_labels": "40"}); err == nil {
		t.Error("max_labels=40 accepted: 2^40 vectors would exhaust memory")
	}
}

func TestBadInput(t *testing.T) {
	d := synthetic(8, 30, 3, 2)
	m, _ := fitT(t, d, models.FitOptions{Params: models.Params{"iters": "2"}})
	cases := []struct {
		name string
		bag  mil.Bag
		mode models.Mode
	}{
		{"dimension", mil.Bag{Instances: [][]float64{{1, 2, 3}}}, models.Inductive},
		{"nan", mil.Bag{Instances: [][]float64{{1, math.NaN()}}}, models.Inductive},
		{"empty bag", mil.Bag{}, models.Inductive},
		{"label range", mil.Bag{Instances: [][]float64{{1, 2}}, Labels: []int{7}}, models.Transductive},
		{"no label", mil.Bag{Instances: [][]float64{{1, 2}}}, models.Transductive},
		{"empty label", mil.Bag{Instances: [][]float64{{1, 2}}, Labels: []int{}}, models.Transductive},
		{"more labels than instances", mil.Bag{Instances: [][]float64{{1, 2}}, Labels: []int{0, 1}}, models.Transductive},
	}
	for _, tc := range cases {
		if _, err := m.Annotate(context.Background(), &tc.bag, tc.mode); !errors.Is(err, models.ErrBadInput) {
			t.Errorf("%s: error %v, want ErrBadInput", tc.name, err)
		}
	}
	neg := *d
	neg.Bags = append(append([]mil.Bag(nil), d.Bags...), mil.Bag{ID: "neg", Instances: [][]float64{{0, 0}}, Labels: []int{}})
	if _, err := Fit(context.Background(), &neg, models.FitOptions{}); !errors.Is(err, models.ErrBadInput) {
		t.Errorf("fit with an empty label set: %v, want ErrBadInput", err)
	}
	if _, err := Fit(context.Background(), d, models.FitOptions{Params: models.Params{"estep": "magic"}}); err == nil {
		t.Error("unknown estep accepted")
	}
}

func TestWorkersGiveIdenticalParameters(t *testing.T) {
	d := synthetic(9, 400, 5, 3) // > several chunks of the M-step problem
	for _, params := range []models.Params{
		{"iters": "8"},
		{"iters": "6", "kernel": "rbf", "dict_frac": "0.2", "subset": "0.5"},
	} {
		m1, _ := fitT(t, d, models.FitOptions{Seed: 3, Workers: 1, Params: params})
		m4, _ := fitT(t, d, models.FitOptions{Seed: 3, Workers: 4, Params: params})
		if !reflect.DeepEqual(m1.lr.W, m4.lr.W) {
			t.Errorf("%v: Workers=1 and Workers=4 give different parameters", params)
		}
		m5, _ := fitT(t, d, models.FitOptions{Seed: 4, Workers: 4, Params: params})
		if params["subset"] != "" && reflect.DeepEqual(m1.lr.W, m5.lr.W) {
			t.Errorf("%v: the seed has no effect on the stochastic variant", params)
		}
	}
}

func TestFASAndForwardFitTheSameModel(t *testing.T) {
	d := synthetic(10, 60, 4, 3)
	mf, _ := fitT(t, d, models.FitOptions{Params: models.Params{"iters": "10"}})
	mw, _ := fitT(t, d, models.FitOptions{Params: models.Params{"iters": "10", "estep": "forward"}})
	for i := range mf.lr.W {
		if math.Abs(mf.lr.W[i]-mw.lr.W[i]) > 1e-6*math.Max(1, math.Abs(mf.lr.W[i])) {
			t.Fatalf("weight %d: fas %v, forward %v", i, mf.lr.W[i], mw.lr.W[i])
		}
	}
}

func TestWarmStartAndProgress(t *testing.T) {
	d := synthetic(11, 60, 4, 3)
	cold, trCold := fitT(t, d, models.FitOptions{Params: models.Params{"iters": "5"}})
	var calls []int
	_, trWarm := fitT(t, d, models.FitOptions{Warm: cold, Params: models.Params{"iters": "5"},
		Progress: func(done, total int) {
			if total != 5 {
				t.Errorf("progress total %d", total)
			}
			calls = append(calls, done)
		}})
	if !reflect.DeepEqual(calls, []int{1, 2, 3, 4, 5}) {
		t.Errorf("progress calls %v", calls)
	}
	// The warm run starts where the cold one ended.
	if trWarm.LogLik[0] < trCold.LogLik[len(trCold.LogLik)-1] {
		t.Errorf("warm start log-likelihood %v below the cold run's last %v", trWarm.LogLik[0], trCold.LogLik[len(trCold.LogLik)-1])
	}
}

func TestPruneDropsMostExpensiveBags(t *testing.T) {
	d := synthetic(12, 50, 6, 2)
	cfg := DefaultConfig()
	cfg.Prune = 0.2
	kept, err := selectBags(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 40 {
		t.Fatalf("kept %d bags, want 40", len(kept))
	}
	cost := func(b *mil.Bag) float64 {
		k := float64(len(b.Labels))
		return float64(len(b.Instances)) * k * math.Exp2(k)
	}
	maxKept := 0.0
	in := map[string]bool{}
	for _, b := range kept {
		maxKept = max(maxKept, cost(b))
		in[b.ID] = true
	}
	for i := range d.Bags {
		if b := &d.Bags[i]; !in[b.ID] && cost(b) < maxKept {
			t.Errorf("pruned bag %s (cost %v) is cheaper than a kept one (%v)", b.ID, cost(b), maxKept)
		}
	}
}

func TestMeanSquaredDistance(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	xs := make([][]float64, 7)
	for i := range xs {
		xs[i] = []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
	}
	brute, pairs := 0.0, 0
	for i := range xs {
		for j := range xs {
			if i != j {
				for k := range xs[i] {
					brute += (xs[i][k] - xs[j][k]) * (xs[i][k] - xs[j][k])
				}
				pairs++
			}
		}
	}
	if got, want := meanSquaredDistance(xs), brute/float64(pairs); math.Abs(got-want) > 1e-12*want {
		t.Errorf("mean squared distance %v, brute force %v", got, want)
	}
}

// TestAnnotateConcurrent runs Annotate from many goroutines (go test -race
// checks the sharing) and compares with sequential results.
func TestAnnotateConcurrent(t *testing.T) {
	d := synthetic(13, 40, 4, 3)
	m, _ := fitT(t, d, models.FitOptions{Params: models.Params{"iters": "3", "kernel": "rbf", "dict_frac": "0.5"}})
	want := make([]models.Annotation, len(d.Bags))
	for i := range d.Bags {
		var err error
		if want[i], err = m.Annotate(context.Background(), &d.Bags[i], models.Transductive); err != nil {
			t.Fatal(err)
		}
	}
	errc := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range d.Bags {
				j := (i + g) % len(d.Bags)
				a, err := m.Annotate(context.Background(), &d.Bags[j], models.Transductive)
				if err == nil && !reflect.DeepEqual(a, want[j]) {
					err = fmt.Errorf("bag %d annotated differently under concurrency", j)
				}
				if err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range 8 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}

func TestToleranceStopsEarly(t *testing.T) {
	d := synthetic(14, 60, 3, 2)
	_, full := fitT(t, d, models.FitOptions{Params: models.Params{"iters": "60"}})
	_, early := fitT(t, d, models.FitOptions{Params: models.Params{"iters": "60", "tol": "1e-3"}})
	if len(full.LogLik) != 60 || len(early.LogLik) >= 60 {
		t.Errorf("iterations: %d without tol, %d with tol=1e-3", len(full.LogLik), len(early.LogLik))
	}
	last := early.Objective[len(early.Objective)-1]
	prev := early.Objective[len(early.Objective)-2]
	if last-prev > 1e-3*math.Abs(last) {
		t.Errorf("stopped while the gain %v was above tol", last-prev)
	}
}

func TestParseConfigDefaults(t *testing.T) {
	tests := []struct {
		params models.Params
		mstep  string
		msteps int
		kernel string
	}{
		{models.Params{}, MStepLBFGS, 10, KernelLinear},
		{models.Params{"kernel": "rbf"}, MStepLBFGS, 100, KernelRBF},
		{models.Params{"kernel": "rbf", "mstep": "gd"}, MStepGD, 30, KernelRBF},
		{models.Params{"mstep": "gd"}, MStepGD, 30, KernelLinear},
		{models.Params{"mstep": "lbfgs", "msteps": "7"}, MStepLBFGS, 7, KernelLinear},
		{models.Params{"scale": "none", "unknown": "true"}, MStepLBFGS, 10, KernelLinear},
		{models.Params{"scale": "minmax", "kernel": "rbf", "mtol": "0"}, MStepLBFGS, 100, KernelRBF},
	}
	for _, tc := range tests {
		c, err := ParseConfig(tc.params)
		if err != nil {
			t.Fatal(err)
		}
		if c.MStep != tc.mstep || c.MSteps != tc.msteps || c.Kernel != tc.kernel {
			t.Errorf("%v: mstep %s × %d, kernel %s", tc.params, c.MStep, c.MSteps, c.Kernel)
		}
		back, err := ParseConfig(c.Params())
		if err != nil || back != c {
			t.Errorf("%v: Params() does not round-trip: %+v vs %+v (%v)", tc.params, back, c, err)
		}
	}
	for _, tc := range []struct {
		params models.Params
		l2     float64
	}{
		{models.Params{}, 2e-3},
		{models.Params{"kernel": "rbf"}, 1e-4},
		{models.Params{"kernel": "rbf", "l2": "0"}, 0},
		{models.Params{"kernel": "linear", "l2": "0.5"}, 0.5},
	} {
		if c, err := ParseConfig(tc.params); err != nil || c.L2 != tc.l2 {
			t.Errorf("%v: l2 %v (%v), want %v", tc.params, c.L2, err, tc.l2)
		}
	}
	for _, bad := range []models.Params{{"l2": "-1"}, {"subset": "0"}, {"prune": "1"}, {"dict_frac": "1.5"}, {"kernel": "poly"}, {"iters": "x"}, {"mstep": "newton"}} {
		if _, err := ParseConfig(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

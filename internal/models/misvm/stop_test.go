package misvm

import (
	"context"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// TestKernelStopMatchesFullRounds: a kernel fit that stops when a round's
// labels equal the previous round's (the forced best instance of a positive
// bag without positive instance no longer counts as a change) ends with
// the model of the former rule, which trained the same labels again until
// the iteration cap: the same support vectors, coefficients and bias, bit
// for bit, for every class and restart choice, in fewer rounds where the
// former rule repeated. It catches a stop on labels that did change (a
// relabeling ignored) and a changed-label test that misses a flip.
func TestKernelStopMatchesFullRounds(t *testing.T) {
	musk, err := dataset.Load("../../../testdata/musk1/musk1.data")
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for i := range musk.Bags {
		if i%10 != 3 {
			idx = append(idx, i)
		}
	}
	muskTrain := musk.Subset(idx)
	tests := []struct {
		name     string
		ds       *mil.Dataset
		instance bool
		params   models.Params
		saves    bool // the former rule repeats rounds here
	}{
		{"mi-SVM Musk1 C=100", muskTrain, true, models.Params{"C": "100"}, false},
		{"mi-SVM Musk1 C=1000 gamma/4", muskTrain, true, models.Params{"C": "1000", "gamma": "0.0015"}, true},
		{"MI-SVM Musk1 C=100", muskTrain, false, models.Params{"C": "100"}, false},
		{"mi-SVM rbf three classes C=100", multiToy(8, 60, 4), true, models.Params{"C": "100"}, true},
		{"mi-SVM rbf ring, two random restarts", ringToy(4, 40), true, models.Params{"C": "30", "restarts": "2", "init": "random"}, false},
		{"mi-SVM poly", binaryToy(5, 40, 3), true, models.Params{"kernel": "poly", "degree": "2", "C": "10"}, false},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := models.Params{"select": "none"}
			for k, v := range tc.params {
				p[k] = v
			}
			cfg, err := ParseParams(p)
			if err != nil {
				t.Fatal(err)
			}
			data, err := ovr.Prepare(tc.ds, cfg.Scale)
			if err != nil {
				t.Fatal(err)
			}
			cfg = cfg.resolve(len(data.Rows))
			var fits [2][]classFit
			var rounds [2]int
			for i, full := range []bool{true, false} {
				s := newSolver(cfg, data, tc.ds.Dim, tc.instance)
				s.fullRounds = full
				ker, err := newKernelData(cfg, data.Rows)
				if err != nil {
					t.Fatal(err)
				}
				if fits[i], err = fitClasses(ctx, data, len(tc.ds.Classes), s, ker, models.FitOptions{Seed: 2, Workers: 1}); err != nil {
					t.Fatal(err)
				}
				for _, f := range fits[i] {
					if l, ok := f.l.(*kernelLearner); ok {
						rounds[i] += l.rounds
					}
				}
			}
			for c := range fits[0] {
				want, got := fits[0][c], fits[1][c]
				if got.constant != want.constant || (got.l == nil) != (want.l == nil) {
					t.Fatalf("class %d: constant %v (learner %v), full rounds %v (%v)", c, got.constant, got.l != nil, want.constant, want.l != nil)
				}
				if want.l == nil {
					continue
				}
				w, g := want.l.(*kernelLearner), got.l.(*kernelLearner)
				if !slices.Equal(g.rows, w.rows) || !slices.Equal(g.coef, w.coef) || g.b != w.b {
					t.Fatalf("class %d: %d support vectors, bias %v; full rounds %d, %v", c, len(g.rows), g.b, len(w.rows), w.b)
				}
			}
			t.Logf("rounds (best restarts): %d, full rounds %d", rounds[1], rounds[0])
			if tc.saves && rounds[1] >= rounds[0] {
				t.Errorf("no round saved (%d, full rounds %d): the case does not exercise the stop", rounds[1], rounds[0])
			}
		})
	}
}

// TestNearestMeanVirtualBias: the initial witness of a dense kernel fit,
// whose rows lack the bias feature (solverRows), is the one of the rows
// with it appended, as the linear fit keeps them, on bags with duplicated
// instances and instances mirrored through the origin. It catches a bias
// term of another value in the distances.
func TestNearestMeanVirtualBias(t *testing.T) {
	ds := multiToy(12, 60, 5)
	for i := range ds.Bags {
		b := &ds.Bags[i]
		if i%3 == 0 && len(b.Instances) > 2 {
			b.Instances[1] = slices.Clone(b.Instances[0])
		}
		if i%3 == 1 && len(b.Instances) > 2 {
			for k := range b.Instances[1] {
				b.Instances[1][k] = -b.Instances[0][k] + 1e-15
			}
		}
	}
	data, err := ovr.Prepare(ds, ovr.ScaleZScore)
	if err != nil {
		t.Fatal(err)
	}
	for _, bias := range []bool{true, false} {
		kcfg := Config{Kernel: KernelRBF, Bias: bias}
		lcfg := Config{Kernel: KernelLinear, Bias: bias}
		sk, sl := solverRows(kcfg, data, ds.Dim), solverRows(lcfg, data, ds.Dim)
		if len(sk.x[0]) != ds.Dim || len(sl.x[0]) != ds.Dim+map[bool]int{true: 1, false: 0}[bias] {
			t.Fatalf("bias=%v: row widths %d (kernel) and %d (linear)", bias, len(sk.x[0]), len(sl.x[0]))
		}
		for i, b := range data.Bags {
			if g, w := sk.nearestMean(b), sl.nearestMean(b); g != w {
				t.Errorf("bias=%v bag %d: witness %d, with the bias feature appended %d", bias, i, g, w)
			}
		}
	}
}

package orlr

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// sparseText is a binary text-like MIL set shaped like TREC9 at a smaller
// scale: bags of 6–10 documents over a vocabulary of 4,000 words, each
// document 12–20 word draws from a Zipf-like background; a positive bag
// (label {0}) holds one or two documents that also carry 3 draws from 20
// topic words, a negative bag has the empty label set (unknown=true). A
// topic word is in few documents, so after unit-norm scaling its evidence
// is a few values of ~0.2 spread over many features: the regime where the
// dense default l2 = 2e-3 flattens the weights to one class.
func sparseText(seed uint64, bags int) *mil.Dataset {
	r := rand.New(rand.NewPCG(seed, 0x74657874))
	const dim, topic = 4000, 20
	zipf := rand.NewZipf(r, 1.1, 4, dim-topic-1)
	doc := func(positive bool) mil.SparseVec {
		x := make([]float64, dim)
		for range 12 + r.IntN(9) {
			x[topic+int(zipf.Uint64())] += 1
		}
		if positive {
			for range 3 {
				x[r.IntN(topic)] += 1
			}
		}
		return mil.SparseOf(x)
	}
	d := &mil.Dataset{Name: "sparse-text", Classes: []string{"topic"}, Dim: dim}
	for b := range bags {
		bag := mil.Bag{ID: fmt.Sprintf("b%d", b), Labels: []int{}}
		n := 6 + r.IntN(5)
		hits := 0
		if b%2 == 0 {
			bag.Labels = []int{0}
			hits = 1 + r.IntN(2)
		}
		for i := range n {
			bag.Sparse = append(bag.Sparse, doc(i < hits))
		}
		r.Shuffle(n, func(i, j int) { bag.Sparse[i], bag.Sparse[j] = bag.Sparse[j], bag.Sparse[i] })
		d.Bags = append(d.Bags, bag)
	}
	return d
}

// bagAccuracy is the held-out bag accuracy of m on test, labels hidden.
func bagAccuracy(t *testing.T, m *Model, test *mil.Dataset) float64 {
	t.Helper()
	right := 0
	for i := range test.Bags {
		b := &test.Bags[i]
		a, err := m.Annotate(context.Background(), &mil.Bag{ID: b.ID, Sparse: b.Sparse}, models.Inductive)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(a.BagLabels, b.Labels) {
			right++
		}
	}
	return float64(right) / float64(len(test.Bags))
}

// TestSparseDefaultIsNotChance fits ORed-LR on a text-like training set
// and scores held-out bags. With the defaults (no l2: chosen by inner CV)
// it must be well above chance; the dense default l2 = 2e-3, given
// explicitly, is held to near chance, which shows this set is one where
// the old default fails (with l2 = 2e-3 as the default the first row
// fails). The selected model is the plain fit with the chosen l2.
func TestSparseDefaultIsNotChance(t *testing.T) {
	train, test := sparseText(1, 160), sparseText(2, 200)
	for _, tc := range []struct {
		name     string
		params   models.Params
		min, max float64 // held-out bag accuracy bounds
	}{
		{"default", models.Params{"unknown": "true"}, 0.85, 1},
		{"old default l2=2e-3", models.Params{"unknown": "true", "l2": "2e-3"}, 0, 0.6},
		{"select=none", models.Params{"unknown": "true", "select": "none"}, 0, 0.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Fit(context.Background(), train, models.FitOptions{Seed: 3, Params: tc.params})
			if err != nil {
				t.Fatal(err)
			}
			acc := bagAccuracy(t, m, test)
			if acc < tc.min || acc > tc.max {
				t.Fatalf("held-out bag accuracy %.3f (l2=%v, select=%q), want in [%v, %v]", acc, m.Config().L2, m.Config().Select, tc.min, tc.max)
			}
			t.Logf("held-out bag accuracy %.3f, l2=%v", acc, m.Config().L2)
		})
	}
}

// TestSelectedEqualsDirectFit checks that a select=cv fit records its
// choice (l2, select=cv) in the model's parameters and that its weights
// are those of a plain fit with the chosen l2; and that refitting from the
// recorded parameters searches nothing and gives the same model.
func TestSelectedEqualsDirectFit(t *testing.T) {
	train := sparseText(3, 60)
	ctx := context.Background()
	m, err := Fit(ctx, train, models.FitOptions{Seed: 5, Params: models.Params{"unknown": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	p := m.Meta().Params
	if p["select"] != SelectCV || !slices.Contains(selectL2Grid(), m.Config().L2) {
		t.Fatalf("params %v: want select=cv and l2 in %v", p, selectL2Grid())
	}
	direct, err := Fit(ctx, train, models.FitOptions{Seed: 5, Params: models.Params{"unknown": "true", "l2": p["l2"]}})
	if err != nil {
		t.Fatal(err)
	}
	refit, err := Fit(ctx, train, models.FitOptions{Seed: 5, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.lr.W, direct.lr.W) || !slices.Equal(m.lr.W, refit.lr.W) {
		t.Fatal("the selected model's weights differ from a plain fit with the chosen l2")
	}
	if direct.Config().Select != "" || refit.Config() != m.Config() {
		t.Fatalf("configs: direct %+v, refit %+v, selected %+v", direct.Config(), refit.Config(), m.Config())
	}
}

// TestSelectL2UsesTrainingBagsOnly checks that the inner CV is a function
// of the labeled training bags and the seed: the same choice and scores
// for any number of workers, and unchanged by unlabeled bags added to the
// training set (which carry nothing to score); another seed draws other
// inner folds.
func TestSelectL2UsesTrainingBagsOnly(t *testing.T) {
	train := sparseText(4, 60)
	cfg, err := ParseConfig(models.Params{"unknown": "true"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(d *mil.Dataset, seed int64, workers int) (float64, []float64) {
		t.Helper()
		l2, scores, err := selectL2(context.Background(), d, models.FitOptions{Seed: seed, Workers: workers, Params: models.Params{"unknown": "true"}}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(scores) != len(selectL2Grid()) {
			t.Fatalf("%d scores for %d candidates", len(scores), len(selectL2Grid()))
		}
		return l2, scores
	}
	l2, scores := run(train, 7, 1)
	withUnlabeled := *train
	withUnlabeled.Bags = slices.Clone(train.Bags)
	for _, b := range sparseText(9, 10).Bags {
		b.Labels = nil
		withUnlabeled.Bags = append(withUnlabeled.Bags, b)
	}
	for _, tc := range []struct {
		name    string
		d       *mil.Dataset
		workers int
	}{
		{"two workers", train, 2},
		{"four workers", train, 4},
		{"unlabeled bags added", &withUnlabeled, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, s := run(tc.d, 7, tc.workers)
			if l != l2 || !slices.Equal(s, scores) {
				t.Fatalf("l2 %v scores %v, want %v %v", l, s, l2, scores)
			}
		})
	}
}

// TestSearchL2 is the rule deciding whether a fit searches l2 and what it
// records in Config.Select.
func TestSearchL2(t *testing.T) {
	for _, tc := range []struct {
		params models.Params
		sparse bool
		search bool
		record string
	}{
		{models.Params{}, false, false, ""},
		{models.Params{}, true, true, SelectCV},
		{models.Params{"l2": "0"}, true, false, ""},
		{models.Params{"select": "none"}, true, false, SelectNone},
		{models.Params{"select": "cv"}, false, true, SelectCV},
		{models.Params{"select": "cv", "l2": "1e-4"}, true, false, SelectCV},
		{models.Params{"select": "none", "l2": "0"}, false, false, SelectNone},
	} {
		cfg, err := ParseConfig(tc.params)
		if err != nil {
			t.Fatal(err)
		}
		if got := searchL2(&cfg, tc.params, tc.sparse); got != tc.search || cfg.Select != tc.record {
			t.Errorf("%v sparse=%v: search %v select %q, want %v %q", tc.params, tc.sparse, got, cfg.Select, tc.search, tc.record)
		}
	}
	if _, err := ParseConfig(models.Params{"select": "grid"}); err == nil {
		t.Error("select=grid accepted")
	}
}

// TestDenseDefaultsUnchanged holds a default fit on dense data to the
// configuration, recorded parameters and serialized configuration it had
// before select existed (the MSCV2 reproduction's setting): no search, l2
// 2e-3, no select key anywhere; the one addition since is prior=uniform,
// which only transductive annotation reads.
func TestDenseDefaultsUnchanged(t *testing.T) {
	old := Config{L2: 2e-3, Iters: 50, Tol: 0, EStep: FAS, Kernel: KernelLinear, KernelS: 0.5,
		DictFrac: 1, Subset: 1, Prune: 0, MaxLabels: 16, MSteps: 10, MStep: MStepLBFGS,
		MTol: 1e-4, Scale: "zscore"}
	oldParams := models.Params{"l2": "0.002", "iters": "50", "tol": "0", "estep": "fas", "kernel": "linear",
		"kernel_s": "0.5", "dict_frac": "1", "subset": "1", "prune": "0", "max_labels": "16", "msteps": "10",
		"mstep": "lbfgs", "scale": "zscore", "mtol": "0.0001", "unknown": "false"}
	if c, err := ParseConfig(nil); err != nil || c != old || DefaultConfig() != old {
		t.Fatalf("ParseConfig(nil) = %+v (%v), DefaultConfig %+v; want %+v", c, err, DefaultConfig(), old)
	}
	for _, tc := range []struct {
		name   string
		d      *mil.Dataset
		params models.Params
		want   func(Config) Config
	}{
		{"multi-label", synthetic(1, 30, 3, 4), nil, func(c Config) Config { return c }},
		{"text densified, unknown", sparseText(5, 20).Densified(), models.Params{"unknown": "true"},
			func(c Config) Config { c.Unknown = true; return c }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Fit(context.Background(), tc.d, models.FitOptions{Seed: 1, Params: tc.params, Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want(old)
			want.Prior = PriorUniform
			if m.Config() != want {
				t.Fatalf("config %+v, want %+v", m.Config(), want)
			}
			wantParams := want.Params()
			if !reflect.DeepEqual(m.Meta().Params, wantParams) || !reflect.DeepEqual(oldParams, old.Params()) {
				t.Fatalf("params %v, want %v", m.Meta().Params, wantParams)
			}
			blob, err := m.MarshalState()
			if err != nil {
				t.Fatal(err)
			}
			var s struct {
				Config map[string]json.RawMessage `json:"config"`
			}
			if err := json.Unmarshal(blob, &s); err != nil {
				t.Fatal(err)
			}
			if _, ok := s.Config["select"]; ok || string(s.Config["l2"]) != "0.002" || string(s.Config["prior"]) != `"uniform"` {
				t.Fatalf("serialized config %s", blob[:min(len(blob), 300)])
			}
		})
	}
}

// TestSparseEmptyLabelsStillNeedUnknown checks that unknown=true keeps its
// meaning under the sparse default: without it, a negative bag's empty
// label set is refused with the same advice, before any inner fit.
func TestSparseEmptyLabelsStillNeedUnknown(t *testing.T) {
	_, err := Fit(context.Background(), sparseText(6, 20), models.FitOptions{Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "unknown=true") || strings.Contains(err.Error(), "select") {
		t.Fatalf("err = %v, want the empty-label-set error naming unknown=true", err)
	}
}

// TestSparseAnnotateMatchesDense holds Annotate's scoring of a sparse bag
// over its non-zeros (scoresSparse: the served path and select=cv's inner
// CV alike) to the same bag densified, whole annotations compared exactly
// in both modes, for the sparsity-keeping transforms, with and without the
// unknown class, and for a multi-label set. It catches an unscaled
// instance and logits of the wrong class or feature.
func TestSparseAnnotateMatchesDense(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		train  *mil.Dataset
		test   *mil.Dataset
		params models.Params
	}{
		{"text unit", sparseText(7, 60), sparseText(8, 60), models.Params{"unknown": "true", "l2": "1e-5"}},
		{"text maxabs", sparseText(7, 60), sparseText(8, 60), models.Params{"unknown": "true", "l2": "0", "scale": "maxabs"}},
		{"multi-label none", sparseMIML(1), sparseMIML(2), models.Params{"scale": "none", "select": "none"}},
		{"multi-label unit, unknown", sparseMIML(1), sparseMIML(3), models.Params{"unknown": "true", "l2": "1e-4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Fit(ctx, tc.train, models.FitOptions{Seed: 1, Params: tc.params})
			if err != nil {
				t.Fatal(err)
			}
			present := 0
			for i := range tc.test.Bags {
				b := &tc.test.Bags[i]
				if !m.scoresSparse(b) {
					t.Fatalf("bag %d: not scored over its non-zeros: the comparison would test nothing", i)
				}
				dense := &mil.Bag{ID: b.ID, Instances: b.DenseInstances(tc.test.Dim), Labels: b.Labels}
				for _, mode := range []models.Mode{models.Inductive, models.Transductive} {
					if mode == models.Transductive && !b.Labeled() {
						continue
					}
					got, err := m.Annotate(ctx, b, mode)
					if err != nil {
						t.Fatal(err)
					}
					want, err := m.Annotate(ctx, dense, mode)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("bag %d %s: sparse %+v, dense %+v", i, mode, got, want)
					}
					present += len(got.BagLabels)
				}
			}
			if present == 0 {
				t.Fatal("no bag label predicted: the comparison saw nothing")
			}
		})
	}
}

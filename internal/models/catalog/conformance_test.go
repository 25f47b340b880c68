package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media/tfidf"
	"github.com/mimlstream/mimlstream/internal/metriclearn"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
	"github.com/mimlstream/mimlstream/internal/testsupport/modeltest"
	"github.com/mimlstream/mimlstream/internal/testsupport/synth"
)

// conformanceData is a small multi-label set every kind can fit: 3 classes,
// label sets of 1 or 2 classes, 1 or 2 instances per label, instance labels
// kept (the supervised kinds need them), non-negative features (the chi2
// kernel needs them). The first 36 bags train, the last 12 are queries.
func conformanceData(t *testing.T) (train *mil.Dataset, test []mil.Bag) {
	t.Helper()
	g := synth.MIML{Bags: 48, Dim: 4, Classes: 3, MaxLabels: 2, MaxPerLabel: 2, Spread: 0.1}
	ds, err := g.Generate(rand.New(rand.NewPCG(7, 11)))
	if err != nil {
		t.Fatal(err)
	}
	ds = modeltest.NonNegative(ds)
	test = ds.Bags[36:]
	ds.Bags = ds.Bags[:36]
	return ds, test
}

// TestConformance runs every catalog kind through the contract of package
// models: declared parameters (and nothing else) accepted, fit on
// synthetic bags, annotations of the right shape, identical after an
// encode/decode round trip and under concurrent use, ErrBadInput for a
// wrong dimension or a non-finite feature, unlabeled and single-instance
// bags accepted, the query left untouched, and the FeatureMapper
// capability consistent with Annotate. A new kind added to the catalog is
// covered without touching this test.
func TestConformance(t *testing.T) {
	reg := catalog.New()
	train, test := conformanceData(t)
	for _, name := range reg.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kind, err := reg.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			checkParamSpecs(t, kind)
			m, err := kind.Fit(context.Background(), train, models.FitOptions{Seed: 1, Workers: 1})
			if err != nil {
				t.Fatalf("fit: %v", err)
			}
			checkMeta(t, kind, m, train)
			want := annotateAll(t, m, test)
			checkRoundTrip(t, reg, m, test, want)
			checkConcurrent(t, m, test, want)
			checkBadInput(t, m, train.Dim)
			checkOddBags(t, m, test[0])
			checkFeatureMapper(t, m, test)
			checkExplicitDefaults(t, kind, train, test, want)
			checkEnumValues(t, reg, kind, train, test)
		})
	}
}

// variantBase holds settings that keep the variant fits of checkEnumValues
// quick where a kind's defaults are made for real data (SyMIL's dual
// solvers at C = 1e4 with λ chosen by inner CV take seconds even here).
var variantBase = map[string]models.Params{
	"symil": {"lambda": "0.5", "C": "100", "cccp_iters": "5"},
	// The polynomial kernel on unit-length passages with its default
	// gamma, 1/(d·variance), about 4 here, has values up to 125 and takes
	// SMO minutes to converge at C = 1e4; 1/d (what the z-scored dense
	// features get) takes a second.
	"misvm+tfidf":  {"gamma": "0.25"},
	"mi-svm+tfidf": {"gamma": "0.25"},
}

// checkEnumValues fits the kind once per non-default value of each enum
// parameter (so every declared value is one the model accepts) and checks
// the round trip and the FeatureMapper path of each variant: some are only
// reached with a setting (orlr's cache with kernel=rbf). A Weighted kind
// (KIND+tfidf) fits sparse passages only, so a value its inner kind
// declares for dense data (a centring scale) must be refused with
// models.ErrDenseOnly instead.
func checkEnumValues(t *testing.T, reg *models.Registry, kind models.Kind, train *mil.Dataset, test []mil.Bag) {
	t.Helper()
	base, weighted := strings.CutSuffix(kind.Name, tfidf.Suffix)
	for _, s := range kind.Params {
		if s.Type != models.ParamEnum {
			continue
		}
		for _, v := range s.Values[1:] {
			t.Run(s.Name+"="+v, func(t *testing.T) {
				p := maps.Clone(variantBase[kind.Name])
				if p == nil {
					p = maps.Clone(variantBase[base])
				}
				if p == nil {
					p = models.Params{}
				}
				p[s.Name] = v
				train, test := train, test
				if base == "mier" && s.Name == "holistic" && v == "bag" {
					// The value reads each bag's own whole vector.
					train, test = withHolistic(train), withHolistic(&mil.Dataset{Bags: test}).Bags
				}
				m, err := kind.Fit(context.Background(), train, models.FitOptions{Seed: 1, Workers: 1, Params: p})
				if weighted && errors.Is(err, models.ErrDenseOnly) {
					return // refused as it must be: the passages are sparse
				}
				if weighted && errors.Is(err, metriclearn.ErrNegativeFeature) {
					// kernel=chi2 reads non-negative features, which the
					// coordinates of a latent semantic basis are not.
					return
				}
				if err != nil {
					t.Fatalf("declared value %s=%s: fit: %v", s.Name, v, err)
				}
				checkRoundTrip(t, reg, m, test, annotateAll(t, m, test))
				checkFeatureMapper(t, m, test)
			})
		}
	}
}

// checkParamSpecs: the kind declares its parameters (a catalog kind may not
// leave them unchecked), the declaration is well formed, and a key outside
// it is rejected by Fit with an error naming every valid key.
func checkParamSpecs(t *testing.T, kind models.Kind) {
	t.Helper()
	if kind.Params == nil {
		t.Fatal("Kind.Params is nil: a catalog kind must declare its parameters (an empty list if none)")
	}
	if err := models.ValidateSpecs(kind.Params); err != nil {
		t.Fatalf("parameter declaration: %v", err)
	}
	_, err := kind.Fit(context.Background(), &mil.Dataset{}, models.FitOptions{Params: models.Params{"no_such_param": "1"}})
	if !errors.Is(err, models.ErrUnknownParam) {
		t.Fatalf("fit with an unknown key: error %v, want ErrUnknownParam", err)
	}
	for _, s := range kind.Params {
		if !strings.Contains(err.Error(), s.Name) {
			t.Errorf("unknown-key error %q does not list the valid key %s", err, s.Name)
		}
	}
	for _, s := range kind.Params {
		if s.Type == models.ParamString {
			continue
		}
		_, err := kind.Fit(context.Background(), &mil.Dataset{}, models.FitOptions{Params: models.Params{s.Name: "not-a-value"}})
		if err == nil || !strings.Contains(err.Error(), s.Name) {
			t.Errorf("fit with %s=not-a-value: error %v, want a type error naming it", s.Name, err)
		}
	}
}

func checkMeta(t *testing.T, kind models.Kind, m models.Model, train *mil.Dataset) {
	t.Helper()
	meta := m.Meta()
	if meta.Kind != kind.Name || !slices.Equal(meta.Classes, train.Classes) || meta.Dim != train.Dim || meta.InstanceLevel != kind.InstanceLevel {
		t.Errorf("Meta = %+v; want kind %s, classes %v, dim %d, instance level %v", meta, kind.Name, train.Classes, train.Dim, kind.InstanceLevel)
	}
}

// query is a bag as an annotator sees it: no instance labels, and no label
// set in inductive mode.
func query(b mil.Bag, mode models.Mode) mil.Bag {
	q := mil.Bag{ID: b.ID, Instances: b.Instances, Holistic: b.Holistic} // the holistic vector is input, not an answer
	if mode == models.Transductive {
		q.Labels = b.Labels
	}
	return q
}

var modes = []models.Mode{models.Inductive, models.Transductive}

// annotateAll annotates every bag in both modes, checking the shape of each
// annotation; out[mode index][bag].
func annotateAll(t *testing.T, m models.Model, bags []mil.Bag) [][]models.Annotation {
	t.Helper()
	out := make([][]models.Annotation, len(modes))
	for i, mode := range modes {
		for _, b := range bags {
			q := query(b, mode)
			a, err := m.Annotate(context.Background(), &q, mode)
			if err != nil {
				t.Fatalf("annotate %s %s: %v", b.ID, mode, err)
			}
			checkShape(t, m.Meta(), &q, mode, a)
			out[i] = append(out[i], a)
		}
	}
	return out
}

// checkShape checks what every consumer of an annotation relies on.
func checkShape(t *testing.T, meta models.Meta, b *mil.Bag, mode models.Mode, a models.Annotation) {
	t.Helper()
	q := len(meta.Classes)
	if !slices.IsSorted(a.BagLabels) || slices.ContainsFunc(a.BagLabels, func(c int) bool { return c < 0 || c >= q }) {
		t.Errorf("%s %s: bag labels %v not ascending classes of %d", b.ID, mode, a.BagLabels, q)
	}
	if a.BagScores != nil && len(a.BagScores) != q {
		t.Errorf("%s %s: %d bag scores for %d classes", b.ID, mode, len(a.BagScores), q)
	}
	for c, s := range a.BagScores {
		if math.IsNaN(s) {
			t.Errorf("%s %s: bag score of class %d is NaN", b.ID, mode, c)
		}
	}
	if !meta.InstanceLevel {
		return
	}
	if len(a.InstanceLabels) != len(b.Instances) {
		t.Fatalf("%s %s: %d instance labels for %d instances", b.ID, mode, len(a.InstanceLabels), len(b.Instances))
	}
	for _, l := range a.InstanceLabels {
		if l != mil.Unlabeled && (l < 0 || l >= q) {
			t.Errorf("%s %s: instance label %d outside %d classes", b.ID, mode, l, q)
		}
		if mode == models.Transductive && l != mil.Unlabeled && !b.HasLabel(l) {
			t.Errorf("%s transductive: instance label %d outside the bag labels %v", b.ID, l, b.Labels)
		}
	}
}

// firstDiff describes the first annotation (in mode, then bag order) where
// got and want differ.
func firstDiff(got, want [][]models.Annotation, bags []mil.Bag) string {
	for i := range want {
		for j := range want[i] {
			if !reflect.DeepEqual(got[i][j], want[i][j]) {
				return fmt.Sprintf("annotates bag %s (%s) differently:\n got %+v\nwant %+v", bags[j].ID, modes[i], got[i][j], want[i][j])
			}
		}
	}
	return "annotates the same"
}

// checkRoundTrip: the decoded model has the same metadata and annotates
// every bag identically in both modes.
func checkRoundTrip(t *testing.T, reg *models.Registry, m models.Model, bags []mil.Bag, want [][]models.Annotation) {
	t.Helper()
	blob, err := models.Encode(m)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	back, err := reg.Decode(blob)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if !reflect.DeepEqual(back.Meta(), m.Meta()) {
		t.Errorf("decoded Meta %+v, want %+v", back.Meta(), m.Meta())
	}
	if got := annotateAll(t, back, bags); !reflect.DeepEqual(got, want) {
		t.Errorf("decoded model %s", firstDiff(got, want, bags))
	}
	again, err := models.Encode(back)
	if err != nil || string(again) != string(blob) {
		t.Errorf("re-encoding the decoded model gives another blob (err %v)", err)
	}
}

// checkConcurrent annotates from several goroutines at once (run with
// -race) and compares with the sequential annotations.
func checkConcurrent(t *testing.T, m models.Model, bags []mil.Bag, want [][]models.Annotation) {
	t.Helper()
	const goroutines = 4
	var wg sync.WaitGroup
	errs := make(chan string, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for r := range len(bags) {
				j := (r + g*3) % len(bags) // each goroutine in another order
				for i, mode := range modes {
					q := query(bags[j], mode)
					a, err := m.Annotate(context.Background(), &q, mode)
					if err != nil || !reflect.DeepEqual(a, want[i][j]) {
						errs <- bags[j].ID + " " + string(mode)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for id := range errs {
		t.Errorf("concurrent annotation of %s differs from the sequential one or fails", id)
	}
}

// checkBadInput: input the model cannot handle is an ErrBadInput, so the
// annotator dead-letters it instead of retrying.
func checkBadInput(t *testing.T, m models.Model, dim int) {
	t.Helper()
	row := func(v float64) []float64 {
		x := make([]float64, dim)
		x[1] = v
		return x
	}
	bad := map[string]mil.Bag{
		"short row":    {ID: "short", Instances: [][]float64{make([]float64, dim-1)}},
		"long row":     {ID: "long", Instances: [][]float64{row(0), make([]float64, dim+1)}},
		"NaN feature":  {ID: "nan", Instances: [][]float64{row(0), row(math.NaN())}},
		"+Inf feature": {ID: "inf", Instances: [][]float64{row(math.Inf(1))}},
		"no instances": {ID: "empty"},
	}
	for what, b := range bad {
		for _, mode := range modes {
			q := b
			if mode == models.Transductive {
				q.Labels = []int{0}
			}
			if _, err := m.Annotate(context.Background(), &q, mode); !errors.Is(err, models.ErrBadInput) {
				t.Errorf("%s, %s: error %v, want one wrapping models.ErrBadInput", what, mode, err)
			}
		}
	}
}

// checkOddBags: a bag without a label set, a single-instance bag (in both
// modes) and a bag whose label set is one class annotate without error and
// leave the query unchanged.
func checkOddBags(t *testing.T, m models.Model, b mil.Bag) {
	t.Helper()
	single := mil.Bag{ID: "single", Instances: [][]float64{slices.Clone(b.Instances[0])}, Labels: []int{b.Labels[0]}}
	cases := []struct {
		name string
		bag  mil.Bag
		mode models.Mode
	}{
		{"unlabeled", mil.Bag{ID: "unlabeled", Instances: b.Instances}, models.Inductive},
		{"single instance", mil.Bag{ID: "single", Instances: single.Instances}, models.Inductive},
		{"single instance, transductive", single, models.Transductive},
	}
	for _, tc := range cases {
		q := tc.bag
		q.Instances = make([][]float64, len(tc.bag.Instances))
		for i, x := range tc.bag.Instances {
			q.Instances[i] = slices.Clone(x)
		}
		q.Labels = slices.Clone(tc.bag.Labels)
		a, err := m.Annotate(context.Background(), &q, tc.mode)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		checkShape(t, m.Meta(), &q, tc.mode, a)
		if !reflect.DeepEqual(q, tc.bag) {
			t.Errorf("%s: Annotate modified the query bag", tc.name)
		}
	}
}

// checkFeatureMapper: a model offering the cached path annotates through it
// exactly as through Annotate.
func checkFeatureMapper(t *testing.T, m models.Model, bags []mil.Bag) {
	t.Helper()
	fm, ok := m.(models.FeatureMapper)
	if !ok || fm.FeatureSpace() == "" {
		return
	}
	for _, mode := range modes {
		for _, b := range bags {
			q := query(b, mode)
			mapped := make([][]float64, len(q.Instances))
			for i, x := range q.Instances {
				v, err := fm.MapInstance(x)
				if err != nil {
					t.Fatalf("MapInstance: %v", err)
				}
				mapped[i] = v
			}
			got, err := fm.AnnotateMapped(context.Background(), &q, mapped, mode)
			if err != nil {
				t.Fatalf("AnnotateMapped: %v", err)
			}
			want, _ := m.Annotate(context.Background(), &q, mode)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: AnnotateMapped differs from Annotate", b.ID, mode)
			}
		}
	}
	if _, err := fm.MapInstance([]float64{math.NaN()}); !errors.Is(err, models.ErrBadInput) {
		t.Errorf("MapInstance of a bad row: error %v, want ErrBadInput", err)
	}
}

// checkExplicitDefaults: giving every parameter its declared default fits
// the same model as giving none, so the declared defaults are the real ones.
func checkExplicitDefaults(t *testing.T, kind models.Kind, train *mil.Dataset, test []mil.Bag, want [][]models.Annotation) {
	t.Helper()
	p := models.Params{}
	for _, s := range kind.Params {
		if s.Default != "" {
			p[s.Name] = s.Default
		}
	}
	if len(p) == 0 {
		return
	}
	m, err := kind.Fit(context.Background(), train, models.FitOptions{Seed: 1, Workers: 1, Params: p})
	if err != nil {
		t.Fatalf("fit with every declared default given: %v", err)
	}
	if got := annotateAll(t, m, test); !reflect.DeepEqual(got, want) {
		t.Errorf("fit with every declared default given (%v) %s", p, firstDiff(got, want, test))
	}
}

// withHolistic returns a copy of d whose bags carry a holistic vector (the
// last instance doubled), as photos featurized whole do.
func withHolistic(d *mil.Dataset) *mil.Dataset {
	out := *d
	out.Bags = slices.Clone(d.Bags)
	for i := range out.Bags {
		b := &out.Bags[i]
		x := b.Instances[len(b.Instances)-1]
		b.Holistic = make([]float64, len(x))
		for j, v := range x {
			b.Holistic[j] = 2 * v
		}
	}
	return &out
}

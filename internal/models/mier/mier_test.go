package mier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// synthetic builds bags of n instances in d dims whose labels depend on the
// bag as a whole: class 0 when the mean of feature 0 is positive, class 1
// when the mean of feature 1 is positive, class 2 when both are. Instances
// are noisy, so a single instance is a weak witness but the bag mean is a
// good one: a pipeline that summarises the bag should beat chance easily.
// Features 0 and 1 vary most between bags relative to their spread within a
// bag, so they are what the unsupervised ratio projection keeps.
func synthetic(seed uint64, bags, n, d int) *mil.Dataset {
	rng := rand.New(rand.NewPCG(seed, 7))
	ds := &mil.Dataset{Name: "synthetic", Classes: []string{"a", "b", "ab"}, Dim: d}
	for b := 0; b < bags; b++ {
		centre := make([]float64, d)
		for j := range centre {
			centre[j] = rng.NormFloat64()
		}
		bag := mil.Bag{ID: fmt.Sprint(b), Labels: []int{}}
		for i := 0; i < n; i++ {
			x := make([]float64, d)
			for j := range x {
				spread := 1.0
				if j < 2 {
					spread = 3
				}
				x[j] = 10 + 3*(spread*centre[j]+0.5*rng.NormFloat64())
			}
			bag.Instances = append(bag.Instances, x)
		}
		if centre[0] > 0 {
			bag.Labels = append(bag.Labels, 0)
		}
		if centre[1] > 0 {
			bag.Labels = append(bag.Labels, 1)
		}
		if centre[0] > 0 && centre[1] > 0 {
			bag.Labels = append(bag.Labels, 2)
		}
		ds.Bags = append(ds.Bags, bag)
	}
	return ds
}

func split(ds *mil.Dataset, nTrain int) (*mil.Dataset, []mil.Bag) {
	tr := *ds
	tr.Bags = ds.Bags[:nTrain]
	return &tr, ds.Bags[nTrain:]
}

func TestFitAnnotateRoundTrip(t *testing.T) {
	ds := synthetic(1, 160, 6, 5)
	train, test := split(ds, 120)
	for _, tc := range []struct {
		params     models.Params
		maxHamming float64
	}{
		{models.Params{"mode": "shared", "classifier": "svm", "r": "2"}, 0.15},
		{models.Params{"mode": "shared", "classifier": "knn", "r": "2"}, 0.22},
		{models.Params{"mode": "none", "classifier": "svm", "grid": "none"}, 0.15},
		{models.Params{"mode": "perbag", "classifier": "knn", "r": "2", "holistic": "median"}, 0.45},
		{models.Params{"mode": "shared", "classifier": "svm", "grid": "none", "holistic": "max", "r": "3"}, 0.3},
		// Fitted on bag vectors the ratio keeps cluster directions rather than
		// the between-bag spread of features 0 and 1: weaker here, by design.
		{models.Params{"mode": "shared", "classifier": "svm", "r": "2", "fiton": "holistic"}, 0.35},
	} {
		t.Run(fmt.Sprint(tc.params), func(t *testing.T) {
			ctx := context.Background()
			m, err := Fit(ctx, train, models.FitOptions{Seed: 3, Params: tc.params, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			meta := m.Meta()
			if meta.Kind != Name || meta.InstanceLevel || meta.Dim != 5 || len(meta.Classes) != 3 {
				t.Fatalf("meta %+v", meta)
			}
			blob, err := models.Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			back, err := models.NewRegistry(Kind()).Decode(blob)
			if err != nil {
				t.Fatal(err)
			}
			var wrong float64
			for i := range test {
				a, err := m.Annotate(ctx, &test[i], models.Inductive)
				if err != nil {
					t.Fatal(err)
				}
				b, err := back.Annotate(ctx, &test[i], models.Inductive)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("decoded model differs: %+v vs %+v", a, b)
				}
				if a.InstanceLabels != nil || a.InstanceScores != nil || len(a.BagScores) != 3 {
					t.Fatalf("annotation shape %+v", a)
				}
				for c := 0; c < 3; c++ {
					if test[i].HasLabel(c) != contains(a.BagLabels, c) {
						wrong++
					}
				}
			}
			h := wrong / float64(3*len(test))
			t.Logf("Hamming loss %.3f", h)
			if h > tc.maxHamming {
				t.Errorf("Hamming loss %.3f above %.3f", h, tc.maxHamming)
			}
		})
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestDeterministicAcrossWorkers: the state must not depend on the number of
// cores, for every mode (per-bag fits run in parallel).
func TestDeterministicAcrossWorkers(t *testing.T) {
	train, _ := split(synthetic(2, 60, 5, 4), 60)
	for _, mode := range []string{ModePerBag, ModeShared} {
		var blobs [][]byte
		for _, w := range []int{1, 3} {
			m, err := Fit(context.Background(), train, models.FitOptions{Seed: 9, Workers: w,
				Params: models.Params{"mode": mode, "r": "2"}})
			if err != nil {
				t.Fatal(err)
			}
			b, err := m.MarshalState()
			if err != nil {
				t.Fatal(err)
			}
			blobs = append(blobs, b)
		}
		if string(blobs[0]) != string(blobs[1]) {
			t.Errorf("%s: state differs between 1 and 3 workers", mode)
		}
	}
}

func TestAnnotateConcurrent(t *testing.T) {
	ds := synthetic(4, 80, 5, 4)
	train, test := split(ds, 60)
	m, err := Fit(context.Background(), train, models.FitOptions{Seed: 1, Params: models.Params{"mode": "perbag", "classifier": "svm", "r": "2", "grid": "none"}})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]models.Annotation, len(test))
	for i := range test {
		if want[i], err = m.Annotate(context.Background(), &test[i], models.Inductive); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range test {
				a, err := m.Annotate(context.Background(), &test[i], models.Transductive)
				if err != nil || !reflect.DeepEqual(a, want[i]) {
					errs <- fmt.Errorf("bag %d: %v, %+v vs %+v", i, err, a, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestBadInput(t *testing.T) {
	train, _ := split(synthetic(5, 30, 4, 3), 30)
	m, err := Fit(context.Background(), train, models.FitOptions{Seed: 1, Params: models.Params{"classifier": "knn", "r": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*mil.Bag{
		"dimension": {ID: "d", Instances: [][]float64{{1, 2}}},
		"NaN":       {ID: "n", Instances: [][]float64{{1, math.NaN(), 3}}},
		"Inf":       {ID: "i", Instances: [][]float64{{1, math.Inf(1), 3}}},
		"empty":     {ID: "e"},
	} {
		if _, err := m.Annotate(context.Background(), b, models.Inductive); !errors.Is(err, models.ErrBadInput) {
			t.Errorf("%s: err = %v, want ErrBadInput", name, err)
		}
	}
	for name, p := range map[string]models.Params{
		"mode":       {"mode": "global"},
		"classifier": {"classifier": "tree"},
		"holistic":   {"holistic": "sum"},
		"r too big":  {"r": "4"},
		"r zero":     {"r": "0"},
		"beta":       {"beta": "1"},
		"not int":    {"k": "three"},
		"grid":       {"grid": "huge"},
		"fiton":      {"fiton": "bags"},
	} {
		if _, err := Fit(context.Background(), train, models.FitOptions{Params: p}); !errors.Is(err, models.ErrBadInput) {
			t.Errorf("params %s: err = %v, want ErrBadInput", name, err)
		}
	}
	bad := *train
	bad.Bags = append([]mil.Bag{{ID: "x", Instances: [][]float64{{1}}, Labels: []int{0}}}, train.Bags...)
	if _, err := Fit(context.Background(), &bad, models.FitOptions{}); !errors.Is(err, models.ErrBadInput) {
		t.Errorf("ragged training bag: err = %v, want ErrBadInput", err)
	}
}

func TestDecodeRejectsCorruptState(t *testing.T) {
	train, _ := split(synthetic(6, 30, 4, 3), 30)
	m, err := Fit(context.Background(), train, models.FitOptions{Seed: 1, Params: models.Params{"r": "1", "grid": "none"}})
	if err != nil {
		t.Fatal(err)
	}
	meta := m.Meta()
	good, _ := m.MarshalState()
	if _, err := Decode(meta, good); err != nil {
		t.Fatalf("good state refused: %v", err)
	}
	for name, blob := range map[string]string{
		"not json":    "{",
		"empty":       "{}",
		"short scale": `{"config":` + mustConfig(t, good) + `,"shift":[0],"scale":[1]}`,
	} {
		if _, err := Decode(meta, []byte(blob)); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	wrongDim := meta
	wrongDim.Dim = 4
	if _, err := Decode(wrongDim, good); err == nil {
		t.Error("state decoded under a meta of another dimension")
	}
}

func mustConfig(t *testing.T, state []byte) string {
	t.Helper()
	var s struct {
		Config any `json:"config"`
	}
	if err := json.Unmarshal(state, &s); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s.Config)
	return string(b)
}

func TestHolistic(t *testing.T) {
	z := [][]float64{{1, 5}, {3, -1}, {2, 0}, {10, 2}}
	for _, tc := range []struct {
		how  string
		want []float64
	}{
		{HolisticMean, []float64{4, 1.5}},
		{HolisticMedian, []float64{2.5, 1}},
		{HolisticMax, []float64{10, 5}},
	} {
		if got := holistic(z, tc.how); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.how, got, tc.want)
		}
	}
}

func TestKNNScores(t *testing.T) {
	k := newKNN(3, [][]float64{{0}, {1}, {2}, {10}}, [][]int{{0}, {0, 1}, {1}, {2}}, 3)
	s := k.scores([]float64{0.2})
	// Neighbours 0, 1, 2: class 0 twice, class 1 twice, class 2 never.
	if !(s[0] >= knnThreshold && s[1] >= knnThreshold && s[2] < knnThreshold) {
		t.Fatalf("scores %v", s)
	}
	// Class 0's neighbours are nearer than class 1's: ties broken by proximity.
	if !(s[0] > s[1]) {
		t.Errorf("proximity tie-break failed: %v", s)
	}
	if math.Abs(s[0]-2.0/3) > 1e-3 {
		t.Errorf("vote fraction %v, want about 2/3", s[0])
	}
}

// TestFullRankSharedIsRotation: with r = d the shared W is orthogonal, so
// y = Wᵀx preserves Euclidean distances and the 3-NN answers must equal
// those on the holistic vectors themselves (mode none). This pins down
// that any gain or loss of the projection comes from dropping dimensions.
func TestFullRankSharedIsRotation(t *testing.T) {
	ds := synthetic(8, 90, 5, 4)
	train, test := split(ds, 70)
	fit := func(p models.Params) models.Model {
		m, err := Fit(context.Background(), train, models.FitOptions{Seed: 2, Params: p})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	rot := fit(models.Params{"mode": "shared", "classifier": "knn", "r": "4"})
	raw := fit(models.Params{"mode": "none", "classifier": "knn"})
	for i := range test {
		a, _ := rot.Annotate(context.Background(), &test[i], models.Inductive)
		b, _ := raw.Annotate(context.Background(), &test[i], models.Inductive)
		if !reflect.DeepEqual(a.BagLabels, b.BagLabels) {
			t.Fatalf("bag %d: labels %v after rotation, %v without", i, a.BagLabels, b.BagLabels)
		}
		for c := range a.BagScores {
			if math.Abs(a.BagScores[c]-b.BagScores[c]) > 1e-9 {
				t.Fatalf("bag %d: scores %v vs %v", i, a.BagScores, b.BagScores)
			}
		}
	}
}

// TestPaperGrid runs the paper's {10⁻⁵..10⁵}² search with inner 5-fold CV on
// a small problem: every class must get a searched pair from the grid.
func TestPaperGrid(t *testing.T) {
	train, _ := split(synthetic(10, 40, 4, 3), 40)
	m, err := Fit(context.Background(), train, models.FitOptions{Seed: 1,
		Params: models.Params{"mode": "none", "grid": "paper", "cvfolds": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	for c, ch := range m.(*Model).st.SVM.Chosen {
		e := math.Log10(ch.C)
		if !ch.Searched || e != math.Round(e) || e < -5 || e > 5 {
			t.Errorf("class %d: chosen %+v not a searched grid point", c, ch)
		}
	}
}

// TestFitOnHolistic: with fiton=holistic the shared W is Algorithm 3 run on
// one point per training bag (its holistic vector), neighbourhoods over the
// pool, from the same W⁰; it is not the W fitted on the instances; and a
// state written before the parameter existed decodes as fitted on instances.
func TestFitOnHolistic(t *testing.T) {
	train, test := split(synthetic(11, 80, 5, 4), 60)
	ctx := context.Background()
	fit := func(p models.Params) *Model {
		m, err := Fit(ctx, train, models.FitOptions{Seed: 4, Params: p})
		if err != nil {
			t.Fatal(err)
		}
		return m.(*Model)
	}
	hol := fit(models.Params{"classifier": "knn", "r": "2", "fiton": "holistic", "holistic": "max"})
	ins := fit(models.Params{"classifier": "knn", "r": "2"})

	pool := make([][]float64, len(train.Bags))
	for i := range train.Bags {
		pool[i] = holistic(hol.standardize(train.Bags[i].Instances), HolisticMax)
	}
	p, err := NewProblem([][][]float64{pool}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.Fit(ctx, hol.w0, hol.st.Config.Opt)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(hol.w, want.W) {
		t.Errorf("fiton=holistic W\n%v\nwant\n%v", mat.Formatted(hol.w), mat.Formatted(want.W))
	}
	if mat.EqualApprox(hol.w, ins.w, 1e-6) {
		t.Error("fiton=holistic gave the W fitted on instances")
	}
	if got := hol.Meta().Params["fiton"]; got != FitHolistic {
		t.Errorf("meta fiton = %q", got)
	}

	// An old state: no fit_on in its config.
	blob, _ := ins.MarshalState()
	var st map[string]any
	if err := json.Unmarshal(blob, &st); err != nil {
		t.Fatal(err)
	}
	delete(st["config"].(map[string]any), "fit_on")
	old, _ := json.Marshal(st)
	back, err := Decode(ins.Meta(), old)
	if err != nil {
		t.Fatalf("state without fit_on: %v", err)
	}
	if got := back.(*Model).st.Config.FitOn; got != FitInstances {
		t.Errorf("state without fit_on decodes as fiton=%q", got)
	}
	a, _ := ins.Annotate(ctx, &test[0], models.Inductive)
	b, _ := back.Annotate(ctx, &test[0], models.Inductive)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("old state annotates %+v, want %+v", b, a)
	}
}

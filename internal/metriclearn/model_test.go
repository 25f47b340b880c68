package metriclearn

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/modeltest"
	"github.com/mimlstream/mimlstream/internal/testsupport/synth"
	"gonum.org/v1/gonum/mat"
)

func synthData(t *testing.T, seed uint64) *mil.Dataset {
	t.Helper()
	g := synth.MIML{Bags: 120, Dim: 6, Classes: 4, MaxLabels: 2, MaxPerLabel: 2, Spread: 0.1}
	ds, err := g.Generate(rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// refCitation is citation-kNN written from its definition: references are
// the r nearest training bags; bag B cites E when E ranks among B's c
// nearest neighbours in (training bags \ {B}) ∪ {E}, ties counted in E's
// favour.
func refCitation(train [][][]float64, labels [][]int, e [][]float64, r, c, k int, maximal bool) (votes []float64, total float64) {
	m := len(train)
	// h is the directed Hausdorff distance; the minimal one is symmetric.
	h := func(a, b [][]float64) float64 {
		worst, best := 0.0, math.Inf(1)
		for _, x := range a {
			near := math.Inf(1)
			for _, y := range b {
				near = min(near, sqDist(x, y))
			}
			worst, best = max(worst, near), min(best, near)
		}
		if maximal {
			return worst
		}
		return best
	}
	dist := func(a, b [][]float64) float64 { return max(h(a, b), h(b, a)) }
	de := make([]float64, m)
	for i := range train {
		de[i] = dist(e, train[i])
	}
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return de[idx[a]] < de[idx[b]] })
	votes = make([]float64, k)
	for _, i := range idx[:min(r, m)] {
		for _, l := range labels[i] {
			votes[l]++
		}
		total++
	}
	for b := range train {
		closer := 0 // other training bags strictly closer to b than e is
		for o := range train {
			if o != b && dist(train[b], train[o]) < de[b] {
				closer++
			}
		}
		if closer < c {
			for _, l := range labels[b] {
				votes[l]++
			}
			total++
		}
	}
	return votes, total
}

func TestCitationKNNMatchesDefinition(t *testing.T) {
	ds := synthData(t, 3)
	train := ds.Subset(modeltest.Seq(0, 100))
	for _, tc := range []struct {
		rc        [2]int
		hausdorff string
	}{{[2]int{20, 20}, "min"}, {[2]int{5, 3}, "min"}, {[2]int{1, 0}, "min"}, {[2]int{0, 7}, "min"}, {[2]int{20, 20}, "max"}, {[2]int{3, 5}, "max"}} {
		rc := tc.rc
		m, err := FitSupervised(context.Background(), "mlca", train, models.FitOptions{Seed: 1, Params: models.Params{
			"refs": itoa(rc[0]), "citers": itoa(rc[1]), "hausdorff": tc.hausdorff}})
		if err != nil {
			t.Fatal(err)
		}
		st := m.State()
		for i := 100; i < 120; i++ {
			b := &ds.Bags[i]
			g := make([][]float64, len(b.Instances))
			for j, x := range b.Instances {
				g[j] = make([]float64, st.Projection.OutDim)
				st.Projection.apply(x, g[j], nil)
			}
			_, scores := m.citationKNN(g)
			votes, total := refCitation(st.TrainBags, st.TrainLabels, g, rc[0], rc[1], 4, tc.hausdorff == "max")
			for c := range votes {
				// The score is votes plus a tie-break below one vote.
				if got := scores[c] * total; got < votes[c]-1e-9 || got >= votes[c]+0.5+1e-9 {
					t.Fatalf("r=%d c=%d bag %d class %d: score·total %.4f, reference votes %.0f", rc[0], rc[1], i, c, got, votes[c])
				}
			}
		}
	}
}

func itoa(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

func TestNystromWithAllLandmarksReproducesKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	xs := make([][]float64, 30)
	for i := range xs {
		xs[i] = []float64{rng.Float64(), rng.Float64(), rng.Float64()}
	}
	for _, kernel := range []string{KernelRBF, KernelChi2} {
		f, err := NewFeatureMap(kernel, 2, 0, xs, rng)
		if err != nil {
			t.Fatal(err)
		}
		phi := f.Matrix(xs)
		var k mat.Dense
		k.Mul(phi, phi.T())
		for i := range xs {
			for j := range xs {
				if want := f.kernel(xs[i], xs[j]); math.Abs(k.At(i, j)-want) > 1e-6 {
					t.Fatalf("%s: Φ Φᵀ[%d,%d] = %v, k = %v", kernel, i, j, k.At(i, j), want)
				}
			}
		}
	}
}

func TestAnnotateTransductiveRestrictsToBagLabels(t *testing.T) {
	ds := synthData(t, 11)
	m, err := FitSupervised(context.Background(), "mlca", ds.Subset(modeltest.Seq(0, 100)), models.FitOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 120; i++ {
		b := ds.Bags[i]
		b.Labels = []int{b.Labels[0]}
		a, err := m.Annotate(context.Background(), &b, models.Transductive)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range a.InstanceLabels {
			if l != b.Labels[0] {
				t.Fatalf("transductive label %d outside bag labels %v", l, b.Labels)
			}
		}
		if !slices.Equal(a.BagLabels, b.Labels) {
			t.Fatalf("transductive bag labels %v, want %v", a.BagLabels, b.Labels)
		}
	}
}

func TestAnnotateBadInput(t *testing.T) {
	ds := synthData(t, 13)
	m, err := FitSupervised(context.Background(), "mlca", ds, models.FitOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	chi, err := FitSupervised(context.Background(), "mlca", modeltest.NonNegative(ds), models.FitOptions{Seed: 1, Params: models.Params{"kernel": "chi2", "landmarks": "50"}})
	if err != nil {
		t.Fatal(err)
	}
	good := make([]float64, 6)
	cases := []struct {
		name  string
		model models.Model
		bag   mil.Bag
	}{
		{"empty", m, mil.Bag{ID: "e"}},
		{"dimension", m, mil.Bag{ID: "d", Instances: [][]float64{{1, 2}}}},
		{"nan", m, mil.Bag{ID: "n", Instances: [][]float64{{0, 0, math.NaN(), 0, 0, 0}}}},
		{"label-range", m, mil.Bag{ID: "l", Instances: [][]float64{good}, Labels: []int{9}}},
		{"chi2-negative", chi, mil.Bag{ID: "c", Instances: [][]float64{{0, 0, -1, 0, 0, 0}}}},
	}
	for _, tc := range cases {
		_, err := tc.model.Annotate(context.Background(), &tc.bag, models.Inductive)
		if !errors.Is(err, models.ErrBadInput) {
			t.Errorf("%s: error %v does not wrap ErrBadInput", tc.name, err)
		}
	}
}

func TestFitDeterministicAcrossWorkers(t *testing.T) {
	ds := synthData(t, 19)
	var blobs [][]byte
	for _, w := range []int{1, 3} {
		m, err := FitSupervised(context.Background(), "mlca", ds, models.FitOptions{Seed: 5, Workers: w, Params: models.Params{"kernel": "rbf", "landmarks": "30"}})
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
		t.Fatal("model state depends on the worker count")
	}
}

func TestFitNeedsInstanceLabels(t *testing.T) {
	ds := synthData(t, 23)
	for i := range ds.Bags {
		ds.Bags[i].InstanceLabels = nil
	}
	if _, err := FitSupervised(context.Background(), "mlca", ds, models.FitOptions{}); !errors.Is(err, ErrNoData) {
		t.Fatalf("error %v, want ErrNoData", err)
	}
}

func TestParseConfigRejects(t *testing.T) {
	for _, p := range []models.Params{
		{"metric": "cosine"}, {"rule": "nearest"}, {"rule": "alpha", "metric": "euclidean"},
		{"refs": "-1"}, {"hausdorff": "mean"}, {"alpha": "x"}, {"landmarks": "-2"}, {"center": "maybe"},
	} {
		if _, err := ParseConfig(p); err == nil {
			t.Errorf("%v accepted", p)
		}
	}
}

package mimlca

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/mimlstream/mimlstream/internal/metriclearn"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/modeltest"
)

// passageDim is the feature space of the synthetic passages: topic t owns
// the words [t·50, t·50+30), and every passage also draws from a shared
// pool of 50 words at the end, as function words would be.
const passageDim = 1000

// passages draws n documents as sparse bags: 1-3 topics each, every topic
// on at least one passage, 2-5 passages of 10 words (6 from the passage's
// topic, 4 from the shared pool), term counts L2-normalised, the true
// topic of each passage in InstanceLabels.
func passages(rng *rand.Rand, n, topics int) *mil.Dataset {
	ds := &mil.Dataset{Name: "passages", Dim: passageDim}
	for t := range topics {
		ds.Classes = append(ds.Classes, "topic"+strconv.Itoa(t))
	}
	for i := range n {
		labels := rng.Perm(topics)[:1+rng.IntN(3)]
		slices.Sort(labels)
		b := mil.Bag{ID: "doc" + strconv.Itoa(i), Labels: labels}
		np := max(len(labels), 2+rng.IntN(4))
		for p := range np {
			topic := labels[p%len(labels)]
			if p >= len(labels) {
				topic = labels[rng.IntN(len(labels))]
			}
			counts := map[int32]float64{}
			for range 6 {
				counts[int32(topic*50+rng.IntN(30))]++
			}
			for range 4 {
				counts[int32(passageDim-50+rng.IntN(50))]++
			}
			var x mil.SparseVec
			for j := range counts {
				x.Idx = append(x.Idx, j)
			}
			slices.Sort(x.Idx)
			norm := 0.0
			for _, j := range x.Idx {
				norm += counts[j] * counts[j]
			}
			for _, j := range x.Idx {
				x.Val = append(x.Val, counts[j]/math.Sqrt(norm))
			}
			b.Sparse = append(b.Sparse, x)
			b.InstanceLabels = append(b.InstanceLabels, topic)
		}
		ds.Bags = append(ds.Bags, b)
	}
	return ds
}

// TestSparseFitAnnotatesPassages fits MIMLCA on sparse passages from bag
// labels only and checks the passages' topics come back, inductively on
// held-out documents and transductively, with the data's defaults (the α
// rule, the ridge, every passage assignable) and with each of them set
// otherwise; the learned map keeps only the features seen in training.
func TestSparseFitAnnotatesPassages(t *testing.T) {
	ds := passages(rand.New(rand.NewPCG(1, 2)), 260, 6)
	train, test := ds.Subset(modeltest.Seq(0, 200)), ds.Subset(modeltest.Seq(200, 260))
	cases := []struct {
		name   string
		params models.Params
		rule   string
	}{
		{"defaults", models.Params{}, metriclearn.RuleAlpha},
		{"select none", models.Params{"select": "none"}, metriclearn.RuleAlpha},
		{"no reassignment", models.Params{"select": "none", "refine_ridge": "0"}, metriclearn.RuleAlpha},
		{"closest centroid", models.Params{"select": "none", "rule": "centroid", "ridge": "0.1"}, metriclearn.RuleCentroid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, res, err := Fit(context.Background(), train, models.FitOptions{Seed: 3, Params: tc.params})
			if err != nil {
				t.Fatal(err)
			}
			st := m.State()
			if st.Rule != tc.rule {
				t.Errorf("rule %q, want %q", st.Rule, tc.rule)
			}
			if n := len(st.Projection.Rows); n == 0 || n > 6*30+50 {
				t.Errorf("map keeps %d features; the training passages have at most %d", n, 6*30+50)
			}
			for j, c := range res.Assigned {
				if c < 0 {
					t.Fatalf("training passage %d left unassigned at the passage capacity", j)
				}
			}
			if acc := modeltest.InductiveAccuracy(t, m, test.Bags); acc < 0.95 {
				t.Errorf("held-out passage accuracy %.3f", acc)
			}
			if acc := modeltest.TransductiveAccuracy(t, m, train.Bags); acc < 0.97 {
				t.Errorf("transductive passage accuracy %.3f", acc)
			}
		})
	}
}

// TestSparseSelectFixesCapacity: select=cv on passages searches the bag
// distance only, at the passage capacity, and records it.
func TestSparseSelectFixesCapacity(t *testing.T) {
	ds := passages(rand.New(rand.NewPCG(4, 2)), 120, 4)
	m, _, err := Fit(context.Background(), ds, models.FitOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Meta().Params["capacity"], strconv.Itoa(passageCapacity(ds)); got != want {
		t.Fatalf("capacity %q recorded, want the passage capacity %s", got, want)
	}
}

func TestSparseRoundTrip(t *testing.T) {
	ds := passages(rand.New(rand.NewPCG(5, 2)), 80, 4)
	m, err := Kind().Fit(context.Background(), ds, models.FitOptions{Seed: 1, Params: models.Params{"select": "none"}})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := models.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := models.NewRegistry(Kind()).Decode(blob)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ds.Bags[:20] {
		for _, mode := range []models.Mode{models.Inductive, models.Transductive} {
			a1, err1 := m.Annotate(context.Background(), &ds.Bags[i], mode)
			a2, err2 := back.Annotate(context.Background(), &ds.Bags[i], mode)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if !slices.Equal(a1.InstanceLabels, a2.InstanceLabels) || !slices.Equal(a1.BagScores, a2.BagScores) {
				t.Fatalf("bag %d: decoded model annotates differently", i)
			}
			for j := range a1.InstanceScores {
				if !slices.Equal(a1.InstanceScores[j], a2.InstanceScores[j]) {
					t.Fatalf("bag %d instance %d: scores %v, decoded %v", i, j, a1.InstanceScores[j], a2.InstanceScores[j])
				}
			}
		}
	}
}

// TestSparseRefusals: the settings that need dense instances, and a
// dataset mixing the two forms, are refused with the error a caller can
// act on, not fitted on something else.
func TestSparseRefusals(t *testing.T) {
	ds := passages(rand.New(rand.NewPCG(6, 2)), 40, 3)
	mixed := ds.Subset(modeltest.Seq(0, 40))
	mixed.Bags[3] = mil.Bag{ID: "dense", Labels: []int{0}, Instances: [][]float64{make([]float64, passageDim)}}
	cases := []struct {
		name   string
		data   *mil.Dataset
		params models.Params
		want   error
	}{
		{"rbf kernel", ds, models.Params{"select": "none", "kernel": "rbf"}, models.ErrDenseOnly},
		{"euclidean metric", ds, models.Params{"select": "none", "metric": "euclidean"}, models.ErrDenseOnly},
		{"no ridge", ds, models.Params{"select": "none", "ridge": "0"}, metriclearn.ErrNeedsRidge},
		{"mixed bags", mixed, models.Params{"select": "none"}, models.ErrBadInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Fit(context.Background(), tc.data, models.FitOptions{Seed: 1, Params: tc.params})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

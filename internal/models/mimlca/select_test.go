package mimlca

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/synth"
)

// withNoise appends extra dimensions of N(0, sd²) noise to every instance.
// The class signal stays in the first dimensions (spread 0.12 in the unit
// cube), so with sd=1 the Euclidean bag distance is dominated by noise while
// the learned metric, fitted on the assigned instances, can ignore it.
func withNoise(ds *mil.Dataset, extra int, sd float64, seed uint64) *mil.Dataset {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := &mil.Dataset{Name: ds.Name, Classes: ds.Classes, Dim: ds.Dim + extra}
	for _, b := range ds.Bags {
		nb := b
		nb.Instances = make([][]float64, len(b.Instances))
		for i, x := range b.Instances {
			y := append([]float64(nil), x...)
			for range extra {
				y = append(y, sd*rng.NormFloat64())
			}
			nb.Instances[i] = y
		}
		out.Bags = append(out.Bags, nb)
	}
	return out
}

// TestSelectPicksKnownBest: on data whose Euclidean geometry is mostly noise,
// the learned metric is far better, and Select must pick it whatever its
// position in the candidate list (so a tie-break to the first candidate
// cannot pass the test).
func TestSelectPicksKnownBest(t *testing.T) {
	ds := withNoise(synthData(t, synth.MIML{Bags: 120, Dim: 6, Classes: 4, MaxLabels: 2, MaxPerLabel: 2, Spread: 0.12}, 11), 12, 1, 3)
	learned := models.Params{"metric": "learned", "refs": "10", "citers": "10"}
	euclid := models.Params{"metric": "euclidean", "refs": "10", "citers": "10"}
	for _, tc := range []struct {
		name  string
		cands []models.Params
		best  int
	}{
		{"learned first", []models.Params{learned, euclid}, 0},
		{"learned last", []models.Params{euclid, learned}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Select(context.Background(), ds, models.FitOptions{Seed: 2, Workers: 2}, tc.cands, 3)
			if err != nil {
				t.Fatal(err)
			}
			if sel.Best != tc.best {
				t.Fatalf("picked %v (scores %v), want %v", sel.Candidates[sel.Best], sel.Scores, tc.cands[tc.best])
			}
			t.Logf("scores %v", sel.Scores)
			// A clear margin, so the test says something about the scores
			// and not about noise between near-equal candidates.
			if gap := sel.Scores[tc.best] - sel.Scores[1-tc.best]; gap < 0.1 {
				t.Fatalf("average precision gap %.3f (scores %v): the problem is not clearly separated", gap, sel.Scores)
			}
		})
	}
}

// TestFitSelectedEqualsDirectFit: select=cv refits the winner on all bags
// with the outer seed, so its model is the direct fit with the chosen
// parameters, and the choice is recorded in Meta().Params. It is also
// independent of the worker count and repeatable.
func TestFitSelectedEqualsDirectFit(t *testing.T) {
	ds := synthData(t, small, 12)
	p := models.Params{"select": "cv", "refs": "10", "citers": "10"}
	var first []byte
	var chosen models.Params
	for _, w := range []int{1, 3, 1} {
		m, _, err := Fit(context.Background(), ds, models.FitOptions{Params: p, Seed: 5, Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		st, err := m.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first, chosen = st, m.Meta().Params
			continue
		}
		if string(st) != string(first) || !reflect.DeepEqual(m.Meta().Params, chosen) {
			t.Fatalf("workers=%d: selection or model differs from the first run", w)
		}
	}
	for _, k := range []string{"select", "capacity", "hausdorff", ParamSelectFolds, ParamSelectScore} {
		if _, ok := chosen[k]; !ok {
			t.Fatalf("Meta().Params %v lacks %s", chosen, k)
		}
	}
	direct := models.Params{"refs": "10", "citers": "10", "capacity": chosen["capacity"], "hausdorff": chosen["hausdorff"]}
	m, _, err := Fit(context.Background(), ds, models.FitOptions{Params: direct, Seed: 5, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	if string(st) != string(first) {
		t.Fatalf("select=cv model differs from the direct fit with %v", direct)
	}
	// A refit from the recorded parameters keeps the choice (both searched
	// keys are now fixed) and gives the same model.
	m, _, err = Fit(context.Background(), ds, models.FitOptions{Params: chosen, Seed: 5, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if st, err = m.MarshalState(); err != nil {
		t.Fatal(err)
	}
	if string(st) != string(first) {
		t.Fatalf("refit from Meta().Params %v differs", chosen)
	}
}

func TestGridCandidates(t *testing.T) {
	g := DefaultGrid()
	for _, tc := range []struct {
		name string
		base models.Params
		want [][2]string // capacity, hausdorff
	}{
		{"full grid, paper setting first", models.Params{"select": "cv"}, [][2]string{{"1", "min"}, {"1", "max"}, {"9", "min"}, {"9", "max"}}},
		{"capacity fixed", models.Params{"capacity": "3"}, [][2]string{{"3", "min"}, {"3", "max"}}},
		{"both fixed", models.Params{"capacity": "2", "hausdorff": "max"}, [][2]string{{"2", "max"}}},
		{"nil base", nil, [][2]string{{"1", "min"}, {"1", "max"}, {"9", "min"}, {"9", "max"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := g.Candidates(tc.base)
			if len(got) != len(tc.want) {
				t.Fatalf("%d candidates, want %d: %v", len(got), len(tc.want), got)
			}
			for i, p := range got {
				if p["capacity"] != tc.want[i][0] || p["hausdorff"] != tc.want[i][1] {
					t.Errorf("candidate %d = %v, want %v", i, p, tc.want[i])
				}
				if _, ok := p["select"]; ok {
					t.Errorf("candidate %d keeps select=: the inner fits would recurse", i)
				}
			}
		})
	}
}

func TestSelectRejects(t *testing.T) {
	ds := synthData(t, small, 13)
	for _, p := range []models.Params{
		{"select": "grid"},
		{"select": "cv", "select.folds": "1"},
		{"select": "cv", "select.folds": "1", "capacity": "1", "hausdorff": "min"},
		{"select": "cv", "select.folds": "100000"},
		{"select": "cv", "hausdorff": "mean"},
	} {
		if _, _, err := Fit(context.Background(), ds, models.FitOptions{Params: p}); err == nil {
			t.Errorf("%v accepted", p)
		}
	}
}

func TestSelectHonoursCancellation(t *testing.T) {
	ds := synthData(t, small, 14)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Fit(ctx, ds, models.FitOptions{Seed: 1, Params: models.Params{"select": "cv"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

package mimlca

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/folds"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/synth"
)

// selectSeparate is Select as it was before the candidates that differ only
// in hausdorff shared their metric: one full fit per candidate and inner
// fold. It is the reference TestSelectSharedMetricMatchesSeparateFits
// checks Select against.
func selectSeparate(ctx context.Context, train *mil.Dataset, opt models.FitOptions, cands []models.Params, k int) (Selection, error) {
	var idx []int
	for i := range train.Bags {
		if train.Bags[i].Labeled() {
			idx = append(idx, i)
		}
	}
	split, err := folds.KFold(len(idx), k, opt.Seed, selectStream)
	if err != nil {
		return Selection{}, fmt.Errorf("select: %w", err)
	}
	accs := make([]*measure.Accumulator, len(cands))
	for c := range accs {
		accs[c] = measure.NewAccumulator(len(train.Classes))
	}
	for f, test := range split {
		inTest := make(map[int]bool, len(test))
		for _, j := range test {
			inTest[j] = true
		}
		tr := &mil.Dataset{Name: train.Name, Classes: train.Classes, Dim: train.Dim}
		te := make([]*mil.Bag, 0, len(test))
		for j, i := range idx {
			if inTest[j] {
				te = append(te, &train.Bags[i])
			} else {
				tr.Bags = append(tr.Bags, train.Bags[i])
			}
		}
		for c, p := range cands {
			m, _, err := fit(ctx, tr, models.FitOptions{Params: p, Seed: innerSeed(opt.Seed, f), Workers: opt.Workers})
			if err != nil {
				return Selection{}, err
			}
			preds, err := measure.Predict(ctx, m, te, models.Inductive, opt.Workers)
			if err != nil {
				return Selection{}, err
			}
			for j, b := range te {
				if err := accs[c].Add(b, preds[j]); err != nil {
					return Selection{}, err
				}
			}
		}
	}
	s := Selection{Candidates: cands, Scores: make([]float64, len(cands)), Best: -1}
	for c, a := range accs {
		s.Scores[c] = a.Result().AveragePrecision
		if s.Best < 0 || s.Scores[c] > s.Scores[s.Best] {
			s.Best = c
		}
	}
	return s, nil
}

// TestSelectSharedMetricMatchesSeparateFits is the differential test of the
// shared metric of Select (one metric learning per inner fold for the
// candidates that differ only in hausdorff) against one fit per candidate:
// the scores must be equal with ==, not within a tolerance, on small random
// problems and on grids where the sharing applies (the default one), partly
// applies (a candidate alone in its group) or does not apply at all. It
// catches a metric learning that reads the bag distance or draws from the
// generator after the k-means, a variant model that keeps the first one's
// radii or index, and a grouping that mixes candidates differing elsewhere.
func TestSelectSharedMetricMatchesSeparateFits(t *testing.T) {
	base := models.Params{"refs": "7", "citers": "7", "restarts": "2"}
	with := func(kv ...string) models.Params {
		p := models.Params{}
		for k, v := range base {
			p[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			p[kv[i]] = kv[i+1]
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		data  synth.MIML
		seed  uint64
		cands []models.Params
		folds int
	}{
		{"default grid", small, 21, DefaultGrid().Candidates(base), 3},
		{"default grid, other data", synth.MIML{Bags: 90, Dim: 5, Classes: 4, MaxLabels: 2, MaxPerLabel: 3, Spread: 0.2}, 22, DefaultGrid().Candidates(base), 2},
		{"euclidean baseline", small, 23, DefaultGrid().Candidates(with("metric", "euclidean", "capacity", "1")), 3},
		{"mixed groups", small, 24, []models.Params{
			with("capacity", "2", "hausdorff", "max"),
			with("capacity", "1", "hausdorff", "min"),
			with("capacity", "2", "hausdorff", "min"),
			with("capacity", "1", "hausdorff", "min", "metric", "euclidean"),
			with("capacity", "1", "hausdorff", "max", "refs", "3"),
		}, 3},
		{"no sharing", small, 25, []models.Params{with("hausdorff", "max"), with("hausdorff", "min", "capacity", "3")}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := synthData(t, tc.data, tc.seed)
			opt := models.FitOptions{Seed: int64(tc.seed), Workers: 2}
			got, err := Select(context.Background(), ds, opt, tc.cands, tc.folds)
			if err != nil {
				t.Fatal(err)
			}
			want, err := selectSeparate(context.Background(), ds, opt, tc.cands, tc.folds)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Scores, want.Scores) || got.Best != want.Best {
				t.Fatalf("shared metric: scores %v best %d; separate fits: %v best %d", got.Scores, got.Best, want.Scores, want.Best)
			}
			// Equal scores that are all NaN or all equal would say
			// nothing about the candidates.
			if slices.ContainsFunc(got.Scores, math.IsNaN) {
				t.Fatalf("scores %v: NaN", got.Scores)
			}
			t.Logf("scores %v", got.Scores)
		})
	}
}

// TestFitGroupEqualsFit: every model of fitGroup is the model fit builds
// from the same parameters and seed, state and metadata alike, so a model
// scored in the inner folds is the one a separate fit would have scored.
func TestFitGroupEqualsFit(t *testing.T) {
	ds := synthData(t, small, 26)
	for _, tc := range []struct {
		name  string
		cands []models.Params
	}{
		{"min then max", []models.Params{{"hausdorff": "min", "capacity": "2"}, {"hausdorff": "max", "capacity": "2"}}},
		{"max then min", []models.Params{{"hausdorff": "max", "citers": "5"}, {"hausdorff": "min", "citers": "5"}}},
		{"no citation-kNN", []models.Params{{"hausdorff": "min", "refs": "0", "citers": "0"}, {"hausdorff": "max", "refs": "0", "citers": "0"}}},
		{"alone", []models.Params{{"hausdorff": "max", "metric": "euclidean"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := make([]int, len(tc.cands))
			for i := range g {
				g[i] = i
			}
			ms, err := fitGroup(context.Background(), ds, tc.cands, g, 9, 2)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range tc.cands {
				want, _, err := fit(context.Background(), ds, models.FitOptions{Params: p, Seed: 9, Workers: 1})
				if err != nil {
					t.Fatal(err)
				}
				gs, err := ms[i].MarshalState()
				if err != nil {
					t.Fatal(err)
				}
				ws, err := want.MarshalState()
				if err != nil {
					t.Fatal(err)
				}
				if string(gs) != string(ws) {
					t.Errorf("candidate %v: fitGroup state differs from fit's", p)
				}
				if !reflect.DeepEqual(ms[i].Meta(), want.Meta()) {
					t.Errorf("candidate %v: metadata %v, want %v", p, ms[i].Meta(), want.Meta())
				}
			}
		})
	}
}

func TestHausdorffGroups(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cands []models.Params
		want  [][]int
	}{
		{"default grid", DefaultGrid().Candidates(nil), [][]int{{0, 1}, {2, 3}}},
		{"interleaved", []models.Params{{"capacity": "1", "hausdorff": "min"}, {"capacity": "9", "hausdorff": "min"}, {"capacity": "1", "hausdorff": "max"}}, [][]int{{0, 2}, {1}}},
		{"other key differs", []models.Params{{"refs": "1", "hausdorff": "min"}, {"refs": "2", "hausdorff": "max"}}, [][]int{{0}, {1}}},
		{"no hausdorff key", []models.Params{{"refs": "1"}, {"refs": "1", "hausdorff": "max"}}, [][]int{{0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hausdorffGroups(tc.cands); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("groups %v, want %v", got, tc.want)
			}
		})
	}
}

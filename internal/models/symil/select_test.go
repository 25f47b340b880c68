package symil

import (
	"context"
	"math"
	"testing"

	"github.com/mimlstream/mimlstream/internal/folds"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// pairedHits builds held-out hits for a preferred transform and an
// alternative over n bags: the alternative alone is right on wins bags,
// the preferred alone on losses bags, both right on the rest.
func pairedHits(n, wins, losses int) [][]int8 {
	pref, alt := make([]int8, n), make([]int8, n)
	for i := range n {
		pref[i], alt[i] = 1, 1
		switch {
		case i < wins:
			pref[i] = 0
		case i < wins+losses:
			alt[i] = 0
		}
	}
	return [][]int8{pref, alt}
}

// TestChooseScale checks the one-standard-error rule of scale=auto on
// hand-made paired hits (180 bags, the size of an inner CV on Elephant or
// Fox). Each case names the fault it catches.
func TestChooseScale(t *testing.T) {
	notScored := pairedHits(180, 30, 0)
	for i := range 40 { // the alternative's wins fall where the preferred was not scored
		notScored[0][i] = -1
	}
	three := pairedHits(180, 12, 6)
	three = append(three, pairedHits(180, 25, 5)[1])
	for _, tc := range []struct {
		name string
		hits [][]int8
		want int
	}{
		// A tie going to the alternative would swap transforms on noise.
		{"tie keeps the preferred", pairedHits(180, 5, 5), 0},
		// The plain argmax of inner accuracy (the rule this replaces) takes
		// the alternative here: 3 more bags of 180, z = 0.73.
		{"within one standard error keeps the preferred", pairedHits(180, 10, 7), 0},
		// A margin so wide that the alternative is never chosen, or the
		// population variance, or the sum instead of the mean: 6 more bags
		// of 18 discordant, z = 1.42.
		{"beyond one standard error takes the alternative", pairedHits(180, 12, 6), 1},
		{"clearly worse keeps the preferred", pairedHits(180, 2, 20), 0},
		{"all-hit alternative against all-miss preferred", pairedHits(180, 180, 0), 1},
		// An unpaired comparison (pairs with an unscored side counted):
		// the 30 wins sit on pairs the preferred did not score.
		{"unscored pairs are ignored", notScored, 0},
		// Taking the first alternative that clears the margin rather than
		// the best one.
		{"the largest clear gain among alternatives", three, 2},
		{"a single transform", pairedHits(180, 0, 0)[:1], 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := chooseScale(tc.hits); got != tc.want {
				t.Errorf("chooseScale = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestChooseLambdaHits checks that the held-out hits chooseLambda returns
// belong to the λ it returns and to the right bags: per inner fold (the
// folds recomputed from the same seed), their hit rate averaged over the
// folds is the reported inner accuracy. It catches hits recorded for
// another λ than the chosen one, or test bags mapped to the wrong training
// index, either of which would make scale=auto compare the transforms on
// the wrong observations.
func TestChooseLambdaHits(t *testing.T) {
	train := mimlToy(5, 60, 2, 4)
	cfg, err := ParseParams(models.Params{"scale": "zscore", "lambda_grid": "0.1,1,10"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := ovr.Prepare(train, cfg.Scale)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := newTrainer(cfg, data.Rows)
	if err != nil {
		t.Fatal(err)
	}
	for c := range train.Classes {
		pos := data.Positive(c)
		seed := ovr.Seed(3, c)
		ch, err := tr.chooseLambda(context.Background(), data.Bags, pos, seed, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(ch.hits) != len(data.Bags) {
			t.Fatalf("class %d: %d hits for %d bags", c, len(ch.hits), len(data.Bags))
		}
		fold := folds.Binary(pos, cfg.CVFolds, seed, 0xf01d)
		ok, n := make([]int, cfg.CVFolds), make([]int, cfg.CVFolds)
		for i, h := range ch.hits {
			if h < 0 {
				t.Fatalf("class %d: bag %d not scored, though every fold has both labels", c, i)
			}
			n[fold[i]]++
			ok[fold[i]] += int(h)
		}
		mean := 0.0
		for f := range ok {
			mean += float64(ok[f]) / float64(n[f]) / float64(len(ok))
		}
		if math.Abs(mean-ch.acc) > 1e-12 {
			t.Errorf("class %d: hits give inner accuracy %.6f, chooseLambda reports %.6f for λ = %v", c, mean, ch.acc, ch.lam)
		}
	}
}

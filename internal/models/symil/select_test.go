package symil

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/folds"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// pairedHits builds held-out hits for a preferred transform and an
// alternative over n bags: the alternative alone is right on wins bags,
// the preferred alone on losses bags, both right on the rest.
func pairedHits(n, wins, losses int) [][]float64 {
	pref, alt := make([]float64, n), make([]float64, n)
	for i := range n {
		pref[i], alt[i] = 1, 1
		switch {
		case i < wins:
			pref[i] = 0
		case i < wins+losses:
			alt[i] = 0
		}
	}
	return [][]float64{pref, alt}
}

// averagedHits averages per bag the hits of several inner repeats (each a
// pairedHits-style pair), the way innerCV reports them.
func averagedHits(reps ...[][]float64) [][]float64 {
	out := make([][]float64, len(reps[0]))
	for si := range out {
		out[si] = make([]float64, len(reps[0][si]))
		for _, r := range reps {
			for i, h := range r[si] {
				out[si][i] += h / float64(len(reps))
			}
		}
	}
	return out
}

// shifted moves the hits of pairedHits by off bags (mod n), so that
// different repeats win and lose on different bags.
func shifted(h [][]float64, off int) [][]float64 {
	out := make([][]float64, len(h))
	for si := range h {
		n := len(h[si])
		out[si] = make([]float64, n)
		for i := range h[si] {
			out[si][(i+off)%n] = h[si][i]
		}
	}
	return out
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
		hits [][]float64
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
		// Repeated inner CV: hits are per-bag fractions of the repeats.
		// The alternative clears the margin in one split (12 against 6,
		// z = 1.42) but not in the two others, where other bags go the
		// other way: averaged per bag it is noise (mean 2/540, z = 0.32). A
		// rule on the first repeat alone, or on pooled (bag, repeat) pairs
		// of one split, takes the alternative.
		{"a win of one split alone is averaged away", averagedHits(pairedHits(180, 12, 6),
			shifted(pairedHits(180, 5, 6), 40), shifted(pairedHits(180, 4, 7), 80)), 0},
		// The same gain on the same bags in every split is a real one:
		// averaging keeps it (z = 1.42 as for a single split).
		{"a win repeated on the same bags is kept", averagedHits(pairedHits(180, 12, 6),
			pairedHits(180, 12, 6), pairedHits(180, 12, 6)), 1},
		// Counting the 3 × 180 (bag, repeat) pairs as independent would
		// shrink the standard error by √3: here z = 0.73 per bag (kept)
		// but 1.26 over pooled pairs (taken).
		{"repeats are not independent observations", averagedHits(pairedHits(180, 10, 7),
			pairedHits(180, 10, 7), pairedHits(180, 10, 7)), 0},
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
	// One split: with repeats, hits are averaged over splits and no longer
	// belong to one fold (TestInnerCVAveragesRepeats covers those).
	cfg, err := ParseParams(models.Params{"kernel": "linear", "scale": "zscore", "lambda_grid": "0.1,1,10", "cv_repeats": "1"})
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
			if h != 0 && h != 1 {
				t.Fatalf("class %d: bag %d has hit %v, want 0 or 1 (one split, every fold has both labels)", c, i, h)
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

// TestInnerSplits checks the repeated inner splits: the same seed gives the
// same splits (determinism of the fit), the first is the single split of
// cv_repeats=1 (folds.Binary at the class seed), the repeats differ from
// one another (identical repeats would average nothing), each is
// stratified, and the splits do not depend on anything but the labels and
// the seed (so they pair across transforms).
func TestInnerSplits(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nPos, nNeg  int
		folds, reps int
		seed        uint64
	}{
		{"Musk1-sized, 3 × 3", 47, 45, 3, 3, 1},
		{"Fox-sized, 3 × 3", 90, 90, 3, 3, 7},
		{"5 folds, 2 repeats", 30, 70, 5, 2, 42},
		{"one repeat", 20, 20, 3, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pos := make([]bool, tc.nPos+tc.nNeg)
			for i := range tc.nPos {
				pos[2*i%len(pos)] = true // interleaved, not a prefix
			}
			nPos := 0
			for _, p := range pos {
				if p {
					nPos++
				}
			}
			tr := &trainer{cfg: Config{CVFolds: tc.folds, CVRepeats: tc.reps}}
			a, b := tr.innerSplits(pos, tc.seed), tr.innerSplits(slices.Clone(pos), tc.seed)
			if len(a) != tc.reps {
				t.Fatalf("%d splits, want %d", len(a), tc.reps)
			}
			for r := range a {
				if !slices.Equal(a[r], b[r]) {
					t.Errorf("repeat %d differs between two calls with the same seed", r)
				}
				for q := range r {
					if slices.Equal(a[r], a[q]) {
						t.Errorf("repeats %d and %d are the same split", q, r)
					}
				}
				cnt := make([]int, tc.folds)
				for i, f := range a[r] {
					if pos[i] {
						cnt[f]++
					}
				}
				for f, c := range cnt {
					if c < nPos/tc.folds || c > nPos/tc.folds+1 {
						t.Errorf("repeat %d fold %d has %d of %d positives: not stratified", r, f, c, nPos)
					}
				}
			}
			if !slices.Equal(a[0], folds.Binary(pos, tc.folds, tc.seed, 0xf01d)) {
				t.Error("the first repeat is not the single split of cv_repeats=1")
			}
			if c := tr.innerSplits(pos, tc.seed+1); slices.Equal(c[0], a[0]) {
				t.Error("another seed gives the same first split")
			}
		})
	}
}

// TestInnerCVAveragesRepeats checks the repeated inner CV against a direct
// computation: with cv_repeats=3, every λ's accuracy is the mean of the
// accuracies of the three single-split runs at the repeats' seeds, its
// hits are the per-bag means of theirs, and the λ chooseLambda keeps is
// the argmax of those means (the smallest on ties). It catches a repeat
// that reuses another's split or fit seed, hits of one repeat written over
// another's, or a choice made on one repeat alone.
func TestInnerCVAveragesRepeats(t *testing.T) {
	train := mimlToy(5, 60, 2, 4)
	for _, sc := range []string{"zscore", "unit"} {
		params := models.Params{"kernel": "linear", "scale": sc, "lambda_grid": "0.1,1,10", "cv_repeats": "3"}
		cfg, err := ParseParams(params)
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
		one := *tr
		one.cfg.CVRepeats = 1
		for c := range train.Classes {
			pos := data.Positive(c)
			seed := ovr.Seed(3, c)
			got, err := tr.innerCV(context.Background(), data.Bags, pos, seed, 2)
			if err != nil {
				t.Fatal(err)
			}
			var single [][]lambdaChoice
			for r := range 3 {
				s, err := one.innerCV(context.Background(), data.Bags, pos, repeatSeed(seed, r), 1)
				if err != nil {
					t.Fatal(err)
				}
				single = append(single, s)
			}
			bestLi, bestAcc := 0, -1.0
			for li, g := range got {
				acc := 0.0
				for r := range 3 {
					acc += single[r][li].acc / 3
				}
				if math.Abs(acc-g.acc) > 1e-12 {
					t.Errorf("%s class %d λ = %v: accuracy %.6f, the mean of the single splits is %.6f", sc, c, g.lam, g.acc, acc)
				}
				if acc > bestAcc+1e-9 {
					bestLi, bestAcc = li, acc
				}
				for i, h := range g.hits {
					want := (single[0][li].hits[i] + single[1][li].hits[i] + single[2][li].hits[i]) / 3
					if math.Abs(h-want) > 1e-12 {
						t.Fatalf("%s class %d λ = %v bag %d: hit %v, the mean of the single splits is %v", sc, c, g.lam, i, h, want)
					}
				}
			}
			ch, err := tr.chooseLambda(context.Background(), data.Bags, pos, seed, 1)
			if err != nil {
				t.Fatal(err)
			}
			if ch.lam != got[bestLi].lam {
				t.Errorf("%s class %d: chooseLambda kept λ = %v, the averaged argmax is %v", sc, c, ch.lam, got[bestLi].lam)
			}
		}
	}
}

// TestPickLambda checks the choice among inner-CV results: the best mean
// accuracy, the smallest λ on ties, unscored candidates (-1) never chosen
// over scored ones.
func TestPickLambda(t *testing.T) {
	c := func(accs ...float64) []lambdaChoice {
		out := make([]lambdaChoice, len(accs))
		for i, a := range accs {
			out[i] = lambdaChoice{lam: float64(i + 1), acc: a}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		cands []lambdaChoice
		want  float64
	}{
		{"the best", c(0.6, 0.8, 0.7), 2},
		{"ties go to the smallest λ", c(0.6, 0.8, 0.8), 2},
		{"a gain below 1e-12 is a tie", c(0.8, 0.8+1e-13), 1},
		{"unscored candidates are skipped", c(-1, 0.5, -1), 2},
		{"none scored keeps the first", c(-1, -1), 1},
		{"a zero accuracy is scored", c(-1, 0), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pickLambda(tc.cands); got.lam != tc.want {
				t.Errorf("pickLambda chose λ = %v, want %v", got.lam, tc.want)
			}
		})
	}
}

package measure

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
)

const eps = 1e-12

func near(a, b float64) bool { return math.Abs(a-b) < eps || (math.IsNaN(a) && math.IsNaN(b)) }

// TestBagMeasures checks every per-bag measure against values worked out by
// hand (the derivations are in the comments).
func TestBagMeasures(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		truth  []int
		scores []float64
		// want one-error, coverage, ranking loss, average precision; NaN = undefined
		oneErr, cov, rl, ap float64
	}{
		{
			// ranks: c0=1 c1=2 c4=3 c2=4 c3=5. Top c0 is true. Coverage
			// max(1,4)-1 = 3. Misordered pairs: (c2,c1), (c2,c4) of 2*3.
			// AP: c0 -> 1/1, c2 -> 2/4; mean 0.75.
			name: "distinct scores", truth: []int{0, 2}, scores: []float64{0.9, 0.8, 0.3, 0.1, 0.5},
			oneErr: 0, cov: 3, rl: 2.0 / 6, ap: 0.75,
		},
		{
			// c0 and c1 tie at the top, both rank 2; c0 is not true, so
			// one-error is 1. c1 ties with the irrelevant c0: 1 of 3 pairs.
			// AP: c1 at rank 2 with 1 true class at or above: 1/2.
			name: "tie at the top", truth: []int{1}, scores: []float64{0.5, 0.5, 0.2, 0.1},
			oneErr: 1, cov: 1, rl: 1.0 / 3, ap: 0.5,
		},
		{
			// All tied: every class has rank 3.
			name: "constant scorer", truth: []int{0}, scores: []float64{7, 7, 7},
			oneErr: 1, cov: 2, rl: 1, ap: 1.0 / 3,
		},
		{
			name: "perfect ranking", truth: []int{1, 3}, scores: []float64{0, 2, -1, 3},
			oneErr: 0, cov: 1, rl: 0, ap: 1,
		},
		{
			// Worst ranking: true classes last. Ranks c1=3, c3=4; AP (1/3+2/4)/2.
			name: "reversed ranking", truth: []int{1, 3}, scores: []float64{5, 1, 4, 0},
			oneErr: 1, cov: 3, rl: 1, ap: (1.0/3 + 0.5) / 2,
		},
		{
			// A full label set: only coverage (Q-1 = 2) is defined.
			name: "full label set", truth: []int{0, 1, 2}, scores: []float64{3, 2, 1},
			oneErr: nan, cov: 2, rl: nan, ap: nan,
		},
		{
			name: "empty label set", truth: []int{}, scores: []float64{3, 2, 1},
			oneErr: nan, cov: nan, rl: nan, ap: nan,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range []struct {
				name string
				f    func([]int, []float64) (float64, bool, error)
				want float64
			}{
				{"one-error", OneErrorBag, tc.oneErr},
				{"coverage", CoverageBag, tc.cov},
				{"ranking loss", RankingLossBag, tc.rl},
				{"average precision", AveragePrecisionBag, tc.ap},
			} {
				v, ok, err := m.f(tc.truth, tc.scores)
				if err != nil {
					t.Fatalf("%s: %v", m.name, err)
				}
				if ok == math.IsNaN(m.want) {
					t.Errorf("%s: defined = %v, want %v", m.name, ok, !math.IsNaN(m.want))
					continue
				}
				if ok && !near(v, m.want) {
					t.Errorf("%s = %v, want %v", m.name, v, m.want)
				}
			}
		})
	}
}

func TestHammingBag(t *testing.T) {
	tests := []struct {
		truth, pred []int
		q           int
		want        float64
	}{
		{[]int{0, 2}, []int{0, 1}, 5, 2.0 / 5},
		{[]int{0, 2}, []int{0, 2}, 5, 0},
		{[]int{}, []int{1}, 3, 1.0 / 3},
		{nil, nil, 3, 0},
		{[]int{0, 1, 2}, nil, 3, 1},
		{[]int{4}, []int{0, 1, 2, 3}, 5, 1},
		{[]int{0}, []int{}, 1, 1}, // binary MIL: a positive bag called negative
	}
	for _, tc := range tests {
		got, err := HammingBag(tc.truth, tc.pred, tc.q)
		if err != nil {
			t.Fatalf("HammingBag(%v, %v): %v", tc.truth, tc.pred, err)
		}
		if !near(got, tc.want) {
			t.Errorf("HammingBag(%v, %v, %d) = %v, want %v", tc.truth, tc.pred, tc.q, got, tc.want)
		}
	}
}

// bruteForce transcribes the definitions literally, enumerating the pairs, with
// rank_f(l) = |{l' : f(l') >= f(l)}|. One-error, ranking loss and average
// precision are 0 for empty or full label sets, coverage for empty ones.
func bruteForce(truth []int, scores []float64) (oneErr, cov, rl, ap float64) {
	q := len(scores)
	rank := func(c int) int {
		n := 0
		for _, s := range scores {
			if s >= scores[c] {
				n++
			}
		}
		return n
	}
	in := func(c int) bool { return slices.Contains(truth, c) }
	for _, l := range truth {
		cov = max(cov, float64(rank(l)-1))
	}
	if len(truth) == 0 || len(truth) == q {
		return 0, cov, 0, 0
	}
	top := slices.Max(scores)
	for c := range scores {
		if scores[c] == top && !in(c) {
			oneErr = 1
		}
	}
	pairs, bad := 0, 0
	for _, l := range truth {
		for c := range scores {
			if !in(c) {
				pairs++
				if scores[l] <= scores[c] {
					bad++
				}
			}
		}
	}
	rl = float64(bad) / float64(pairs)
	for _, l := range truth {
		n := 0
		for _, m := range truth {
			if rank(m) <= rank(l) {
				n++
			}
		}
		ap += float64(n) / float64(rank(l))
	}
	return oneErr, cov, rl, ap / float64(len(truth))
}

// TestRankingBruteForce compares the measures with a literal transcription
// of the definitions on random bags with many ties.
func TestRankingBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 2000; trial++ {
		q := 1 + rng.IntN(7)
		scores := make([]float64, q)
		for c := range scores {
			scores[c] = float64(rng.IntN(4)) // few values: many ties
		}
		var truth []int
		for c := 0; c < q; c++ {
			if rng.IntN(2) == 0 {
				truth = append(truth, c)
			}
		}
		nontrivial := len(truth) > 0 && len(truth) < q
		wantOE, wantCov, wantRL, wantAP := bruteForce(truth, scores)

		check := func(name string, f func([]int, []float64) (float64, bool, error), want float64, defined bool) {
			t.Helper()
			got, ok, err := f(truth, scores)
			if err != nil {
				t.Fatalf("%s(%v, %v): %v", name, truth, scores, err)
			}
			if ok != defined || (ok && !near(got, want)) {
				t.Fatalf("%s(%v, %v) = %v (defined %v), want %v (defined %v)", name, truth, scores, got, ok, want, defined)
			}
		}
		check("one-error", OneErrorBag, wantOE, nontrivial)
		check("ranking loss", RankingLossBag, wantRL, nontrivial)
		check("average precision", AveragePrecisionBag, wantAP, nontrivial)
		check("coverage", CoverageBag, wantCov, len(truth) > 0)
	}
}

func TestInvalid(t *testing.T) {
	tests := []struct {
		name   string
		truth  []int
		scores []float64
	}{
		{"label out of range", []int{3}, []float64{1, 2, 3}},
		{"negative label", []int{-1}, []float64{1, 2, 3}},
		{"not ascending", []int{1, 0}, []float64{1, 2, 3}},
		{"duplicate", []int{1, 1}, []float64{1, 2, 3}},
		{"NaN score", []int{1}, []float64{1, math.NaN(), 3}},
		{"no scores", []int{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []func([]int, []float64) (float64, bool, error){OneErrorBag, CoverageBag, RankingLossBag, AveragePrecisionBag} {
				if _, _, err := f(tc.truth, tc.scores); !errors.Is(err, ErrInvalid) {
					t.Errorf("err = %v, want ErrInvalid", err)
				}
			}
		})
	}
	if _, err := HammingBag([]int{0}, []int{5}, 3); !errors.Is(err, ErrInvalid) {
		t.Errorf("HammingBag with out-of-range prediction: err = %v, want ErrInvalid", err)
	}
}

// TestAccumulator scores a small set of bags whose averages are worked out by
// hand, covering the conventions for unlabeled instances and bags and for
// empty and full label sets.
func TestAccumulator(t *testing.T) {
	bags := []struct {
		truth mil.Bag
		pred  Prediction
	}{
		{ // A: 2 of 3 known instances right (the third is Unlabeled).
			// Hamming |{1}|/3; scores rank c0=1 c1=2 c2=3: one-error 0,
			// coverage 0, ranking loss 0, AP 1. Not an exact match.
			truth: mil.Bag{ID: "a", Instances: make([][]float64, 4), Labels: []int{0}, InstanceLabels: []int{0, 0, mil.Unlabeled, 0}},
			pred:  Prediction{InstanceLabels: []int{0, 1, 2, 0}, BagLabels: []int{0, 1}, BagScores: []float64{0.9, 0.5, 0.1}},
		},
		{ // B: 1 of 2 right. Exact bag match: Hamming 0. Truth {1,2}, ranks
			// c2=1 c0=2 c1=3: one-error 0, coverage 2, misordered (c1,c0): 1/2,
			// AP (1/1 + 2/3)/2 = 5/6.
			truth: mil.Bag{ID: "b", Instances: make([][]float64, 2), Labels: []int{1, 2}, InstanceLabels: []int{1, 2}},
			pred:  Prediction{InstanceLabels: []int{1, 1}, BagLabels: []int{1, 2}, BagScores: []float64{0.5, 0.2, 0.8}},
		},
		{ // C: full label set: Hamming 1/3 (missed c2), coverage 2 (ranks
			// c0=1 c1=2 c2=3); no one-error, ranking loss, AP.
			truth: mil.Bag{ID: "c", Instances: make([][]float64, 1), Labels: []int{0, 1, 2}},
			pred:  Prediction{BagLabels: []int{0, 1}, BagScores: []float64{3, 2, 1}},
		},
		{ // D: empty label set (negative bag): Hamming 1/3, nothing else.
			// An exact match would need an empty prediction.
			truth: mil.Bag{ID: "d", Instances: make([][]float64, 1), Labels: []int{}},
			pred:  Prediction{BagLabels: []int{2}, BagScores: []float64{0, 0, 1}},
		},
		{ // E: unlabeled bag: only its instances count (1 of 1 right).
			truth: mil.Bag{ID: "e", Instances: make([][]float64, 1), InstanceLabels: []int{2}},
			pred:  Prediction{InstanceLabels: []int{2}, BagLabels: []int{0}, BagScores: []float64{1, 0, 0}},
		},
	}
	acc := NewAccumulator(3)
	for _, b := range bags {
		if err := acc.Add(&b.truth, b.pred); err != nil {
			t.Fatal(err)
		}
	}
	got := acc.Result()
	want := Result{
		InstanceAccuracy: 4.0 / 6, // (2 + 1 + 1) of (3 + 2 + 1)
		HammingLoss:      (1.0/3 + 0 + 1.0/3 + 1.0/3) / 4,
		BagAccuracy:      1.0 / 4,
		OneError:         0,
		Coverage:         (0 + 2 + 2) / 3.0,
		RankingLoss:      (0 + 0.5) / 2,
		AveragePrecision: (1 + 5.0/6) / 2,
		Instances:        6, Bags: 4, Ranked: 2, Covered: 3,
	}
	for name, pair := range map[string][2]float64{
		"instance accuracy": {got.InstanceAccuracy, want.InstanceAccuracy},
		"hamming":           {got.HammingLoss, want.HammingLoss},
		"bag accuracy":      {got.BagAccuracy, want.BagAccuracy},
		"one-error":         {got.OneError, want.OneError},
		"coverage":          {got.Coverage, want.Coverage},
		"ranking loss":      {got.RankingLoss, want.RankingLoss},
		"average precision": {got.AveragePrecision, want.AveragePrecision},
	} {
		if !near(pair[0], pair[1]) {
			t.Errorf("%s = %v, want %v", name, pair[0], pair[1])
		}
	}
	if got.Instances != want.Instances || got.Bags != want.Bags || got.Ranked != want.Ranked || got.Covered != want.Covered {
		t.Errorf("counts = %d/%d/%d/%d, want %d/%d/%d/%d", got.Instances, got.Bags, got.Ranked, got.Covered,
			want.Instances, want.Bags, want.Ranked, want.Covered)
	}
	if n := len(got.Values()); n != 7 {
		t.Errorf("Values has %d measures, want 7", n)
	}
}

// TestAccumulatorUndefined checks that measures a model cannot support are
// reported undefined rather than averaged over a biased subset.
func TestAccumulatorUndefined(t *testing.T) {
	truth := mil.Bag{ID: "a", Instances: make([][]float64, 2), Labels: []int{0}, InstanceLabels: []int{0, 0}}
	tests := []struct {
		name    string
		preds   []Prediction
		missing []string
	}{
		{"bag-level model", []Prediction{{BagLabels: []int{0}, BagScores: []float64{1, 0}}}, []string{InstanceAccuracy}},
		{"one bag without scores", []Prediction{
			{InstanceLabels: []int{0, 0}, BagLabels: []int{0}, BagScores: []float64{1, 0}},
			{InstanceLabels: []int{0, 0}, BagLabels: []int{0}},
		}, []string{RankingLoss, OneError, Coverage, AveragePrecision}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			acc := NewAccumulator(2)
			for _, p := range tc.preds {
				if err := acc.Add(&truth, p); err != nil {
					t.Fatal(err)
				}
			}
			vals := acc.Result().Values()
			for _, m := range tc.missing {
				if _, ok := vals[m]; ok {
					t.Errorf("%s defined, want undefined", m)
				}
			}
			if len(vals) != 7-len(tc.missing) {
				t.Errorf("values %v, want all but %v", vals, tc.missing)
			}
		})
	}
	if v := NewAccumulator(2).Result().Values(); len(v) != 0 {
		t.Errorf("empty accumulator values = %v, want none", v)
	}
}

func TestAccumulatorErrors(t *testing.T) {
	truth := mil.Bag{ID: "a", Instances: make([][]float64, 2), Labels: []int{0}, InstanceLabels: []int{0, 1}}
	tests := []struct {
		name string
		p    Prediction
	}{
		{"instance count", Prediction{InstanceLabels: []int{0}, BagLabels: []int{0}}},
		{"bag label range", Prediction{InstanceLabels: []int{0, 0}, BagLabels: []int{2}}},
		{"score count", Prediction{InstanceLabels: []int{0, 0}, BagLabels: []int{0}, BagScores: []float64{1}}},
		{"NaN score", Prediction{InstanceLabels: []int{0, 0}, BagLabels: []int{0}, BagScores: []float64{1, math.NaN()}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := NewAccumulator(2).Add(&truth, tc.p); !errors.Is(err, ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

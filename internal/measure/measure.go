// Package measure holds the evaluation measures of multi-instance multi-label
// learning: instance annotation accuracy and the bag-level measures of
// Zhang & Zhou (Hamming loss, one-error, coverage, ranking loss, average
// precision), plus exact-match bag accuracy for binary MIL.
//
// Conventions (the papers leave them open; these follow Zhang & Zhou's
// reference MATLAB code where it decides, and are pessimistic elsewhere):
//
//   - Ranks: rank_f(l) = |{l' : f(l') >= f(l)}|, so tied classes all take the
//     worst rank of their group. A model gains nothing from ties: a constant
//     scorer gets the worst possible coverage, ranking loss and precision.
//   - One-error counts an error unless every top-scored class is relevant.
//   - Ranking loss, one-error and average precision are undefined for a bag
//     whose label set is empty or holds every class; such bags are left out
//     of those three averages (as in Zhang & Zhou's code).
//   - Coverage is undefined for an empty label set (max over no class); such
//     bags are left out. A full label set counts, with coverage Q-1.
//   - Hamming loss and bag accuracy count every labeled bag.
//   - Instance accuracy counts instances whose true class is known
//     (not mil.Unlabeled).
//
// A measure with no bag (or instance) to average over is NaN in Result and
// absent from Result.Values.
package measure

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// Names of the measures, as used in Result.Values and in reports.
const (
	InstanceAccuracy = "instance_accuracy"
	HammingLoss      = "hamming_loss"
	RankingLoss      = "ranking_loss"
	OneError         = "one_error"
	Coverage         = "coverage"
	AveragePrecision = "average_precision"
	BagAccuracy      = "bag_accuracy"
)

// ErrInvalid marks a prediction or truth that the measures cannot score:
// a label outside the vocabulary, a score vector of the wrong length, a NaN
// score. It points at a bug in a model, not at the data.
var ErrInvalid = errors.New("invalid prediction")

// HammingBag returns |pred Δ truth| / q for one bag. Both sets must be
// ascending class indices in [0, q).
func HammingBag(truth, pred []int, q int) (float64, error) {
	if err := checkSet(truth, q); err != nil {
		return 0, fmt.Errorf("true labels: %w", err)
	}
	if err := checkSet(pred, q); err != nil {
		return 0, fmt.Errorf("predicted labels: %w", err)
	}
	// Merge two ascending lists, counting elements in exactly one of them.
	diff, i, j := 0, 0, 0
	for i < len(truth) && j < len(pred) {
		switch {
		case truth[i] == pred[j]:
			i++
			j++
		case truth[i] < pred[j]:
			diff++
			i++
		default:
			diff++
			j++
		}
	}
	diff += len(truth) - i + len(pred) - j
	return float64(diff) / float64(q), nil
}

// rank returns the pessimistic rank of class c: the number of classes scored
// at least as high, so tied classes all take the worst rank of their group.
// Computing it per true class costs O(|Y| Q), less than sorting all Q
// classes when label sets are small.
func rank(scores []float64, c int) int {
	n := 0
	for _, s := range scores {
		if s >= scores[c] {
			n++
		}
	}
	return n
}

// checkScored validates a bag's truth and scores for the ranking measures and
// reports whether the measures are defined for it (label set neither empty
// nor full).
func checkScored(truth []int, scores []float64) (bool, error) {
	q := len(scores)
	if q == 0 {
		return false, fmt.Errorf("%w: no class scores", ErrInvalid)
	}
	for c, s := range scores {
		if math.IsNaN(s) {
			return false, fmt.Errorf("%w: score of class %d is NaN", ErrInvalid, c)
		}
	}
	if err := checkSet(truth, q); err != nil {
		return false, fmt.Errorf("true labels: %w", err)
	}
	return len(truth) > 0 && len(truth) < q, nil
}

// OneErrorBag returns 1 if a top-scored class is not in truth, else 0.
// ok is false when the measure is undefined (empty or full label set).
func OneErrorBag(truth []int, scores []float64) (v float64, ok bool, err error) {
	if ok, err = checkScored(truth, scores); !ok {
		return 0, false, err
	}
	top := slices.Max(scores)
	for c, s := range scores {
		if s == top && !slices.Contains(truth, c) {
			return 1, true, nil
		}
	}
	return 0, true, nil
}

// CoverageBag returns max over true classes of rank - 1: how far down the
// ranking one must go to cover every true class. ok is false for an empty
// label set. Pham et al. 2017 (Table 7) print coverage as a percentage of the
// number of classes Q: divide by Q to compare.
func CoverageBag(truth []int, scores []float64) (v float64, ok bool, err error) {
	if _, err = checkScored(truth, scores); err != nil {
		return 0, false, err
	}
	if len(truth) == 0 {
		return 0, false, nil
	}
	worst := 0
	for _, c := range truth {
		worst = max(worst, rank(scores, c))
	}
	return float64(worst - 1), true, nil
}

// RankingLossBag returns the fraction of (relevant, irrelevant) class pairs
// that are misordered: f(relevant) <= f(irrelevant). ok is false when the
// label set is empty or full.
func RankingLossBag(truth []int, scores []float64) (v float64, ok bool, err error) {
	if ok, err = checkScored(truth, scores); !ok {
		return 0, false, err
	}
	relevant := make([]bool, len(scores))
	for _, c := range truth {
		relevant[c] = true
	}
	bad := 0
	for _, l := range truth {
		for c, s := range scores {
			if !relevant[c] && scores[l] <= s {
				bad++
			}
		}
	}
	return float64(bad) / float64(len(truth)*(len(scores)-len(truth))), true, nil
}

// AveragePrecisionBag returns, averaged over the true classes l, the fraction
// of classes ranked at or above l that are true. ok is false when the label
// set is empty or full.
func AveragePrecisionBag(truth []int, scores []float64) (v float64, ok bool, err error) {
	if ok, err = checkScored(truth, scores); !ok {
		return 0, false, err
	}
	ranks := make([]int, len(truth))
	for i, l := range truth {
		ranks[i] = rank(scores, l)
	}
	sum := 0.0
	for _, rl := range ranks {
		above := 0
		for _, rm := range ranks {
			if rm <= rl {
				above++
			}
		}
		sum += float64(above) / float64(rl)
	}
	return sum / float64(len(truth)), true, nil
}

// checkSet verifies that labels are ascending, distinct and in [0, q).
func checkSet(labels []int, q int) error {
	for i, l := range labels {
		if l < 0 || l >= q {
			return fmt.Errorf("%w: class %d outside [0,%d)", ErrInvalid, l, q)
		}
		if i > 0 && l <= labels[i-1] {
			return fmt.Errorf("%w: labels %v not strictly ascending", ErrInvalid, labels)
		}
	}
	return nil
}

// Result holds the measures over a set of bags. A field is NaN when no bag
// qualified for it. The counts say how many bags each mean is over.
type Result struct {
	InstanceAccuracy float64
	HammingLoss      float64
	RankingLoss      float64
	OneError         float64
	Coverage         float64
	AveragePrecision float64
	BagAccuracy      float64

	Instances int // instances with a known class
	Bags      int // labeled bags (Hamming loss, bag accuracy)
	Ranked    int // bags with a non-trivial label set and scores
	Covered   int // bags with a non-empty label set and scores
}

// Values returns the defined measures by name.
func (r Result) Values() map[string]float64 {
	m := make(map[string]float64, 7)
	for name, v := range map[string]float64{
		InstanceAccuracy: r.InstanceAccuracy,
		HammingLoss:      r.HammingLoss,
		RankingLoss:      r.RankingLoss,
		OneError:         r.OneError,
		Coverage:         r.Coverage,
		AveragePrecision: r.AveragePrecision,
		BagAccuracy:      r.BagAccuracy,
	} {
		if !math.IsNaN(v) {
			m[name] = v
		}
	}
	return m
}

// Accumulator averages the measures over bags added one at a time. The zero
// value is not usable; use NewAccumulator.
type Accumulator struct {
	q int

	instCorrect, instTotal int
	hamming                float64
	exact, bags            int
	oneErr, rankLoss, ap   float64
	ranked                 int
	coverage               float64
	covered                int
	// unscored counts labeled bags without scores: the ranking measures are
	// then undefined rather than averaged over a biased subset.
	unscored int
	// noInstances is set when a bag with known instance classes came without
	// instance predictions (a bag-level model).
	noInstances bool
}

// NewAccumulator returns an accumulator for a vocabulary of q classes.
func NewAccumulator(q int) *Accumulator { return &Accumulator{q: q} }

// Prediction is what a model said about one bag, in the form the measures need.
type Prediction struct {
	InstanceLabels []int     // nil for bag-level models
	BagLabels      []int     // ascending
	BagScores      []float64 // nil when the model does not rank classes
}

// Add scores one bag against its ground truth. An unlabeled bag
// (truth.Labels == nil) contributes to instance accuracy only. After an error
// the accumulator may hold part of the bag and should be discarded.
func (a *Accumulator) Add(truth *mil.Bag, p Prediction) error {
	if truth.InstanceLabels != nil {
		if p.InstanceLabels == nil {
			a.noInstances = true
		} else {
			if len(p.InstanceLabels) != len(truth.InstanceLabels) {
				return fmt.Errorf("bag %q: %w: %d instance labels for %d instances",
					truth.ID, ErrInvalid, len(p.InstanceLabels), len(truth.InstanceLabels))
			}
			for i, y := range truth.InstanceLabels {
				if y == mil.Unlabeled {
					continue
				}
				a.instTotal++
				if p.InstanceLabels[i] == y {
					a.instCorrect++
				}
			}
		}
	}
	if !truth.Labeled() {
		return nil
	}
	h, err := HammingBag(truth.Labels, p.BagLabels, a.q)
	if err != nil {
		return fmt.Errorf("bag %q: %w", truth.ID, err)
	}
	a.hamming += h
	a.bags++
	if slices.Equal(truth.Labels, p.BagLabels) {
		a.exact++
	}
	if p.BagScores == nil {
		a.unscored++
		return nil
	}
	if len(p.BagScores) != a.q {
		return fmt.Errorf("bag %q: %w: %d bag scores for %d classes", truth.ID, ErrInvalid, len(p.BagScores), a.q)
	}
	cov, ok, err := CoverageBag(truth.Labels, p.BagScores)
	if err != nil {
		return fmt.Errorf("bag %q: %w", truth.ID, err)
	}
	if ok {
		a.coverage += cov
		a.covered++
	}
	oe, ok, _ := OneErrorBag(truth.Labels, p.BagScores)
	if !ok {
		return nil
	}
	rl, _, _ := RankingLossBag(truth.Labels, p.BagScores)
	ap, _, _ := AveragePrecisionBag(truth.Labels, p.BagScores)
	a.oneErr += oe
	a.rankLoss += rl
	a.ap += ap
	a.ranked++
	return nil
}

// Result returns the averages over the bags added so far.
func (a *Accumulator) Result() Result {
	mean := func(sum float64, n int) float64 {
		if n == 0 {
			return math.NaN()
		}
		return sum / float64(n)
	}
	r := Result{
		InstanceAccuracy: mean(float64(a.instCorrect), a.instTotal),
		HammingLoss:      mean(a.hamming, a.bags),
		BagAccuracy:      mean(float64(a.exact), a.bags),
		RankingLoss:      mean(a.rankLoss, a.ranked),
		OneError:         mean(a.oneErr, a.ranked),
		AveragePrecision: mean(a.ap, a.ranked),
		Coverage:         mean(a.coverage, a.covered),
		Instances:        a.instTotal,
		Bags:             a.bags,
		Ranked:           a.ranked,
		Covered:          a.covered,
	}
	if a.noInstances {
		r.InstanceAccuracy, r.Instances = math.NaN(), 0
	}
	if a.unscored > 0 {
		r.RankingLoss, r.OneError, r.AveragePrecision, r.Coverage = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		r.Ranked, r.Covered = 0, 0
	}
	return r
}

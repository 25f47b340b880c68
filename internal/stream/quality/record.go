// Package quality measures how the served model versions do on live
// traffic. For a bag that carries its bag labels (and, for audit samples,
// instance labels), an annotator also makes the inductive prediction, the
// one made without the labels, and scores it against them: Hamming loss,
// average precision and, when instance labels are present, instance
// accuracy. Scores are summed per model version in Redis, in time buckets
// (rolling windows, a series for the status page) and in totals, so every
// annotator instance and the status page see the same figures. A
// "candidate" version (featurestore.AliasCandidate) is run in shadow on the
// same bags, and Judge promotes or rejects it on the evidence.
package quality

import (
	"fmt"
	"math"

	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// Record sums per-bag scores. Means are NaN when nothing was counted.
type Record struct {
	// Bags scored (each with a bag label set), and the sum of their
	// Hamming losses.
	Bags    int64   `json:"bags"`
	Hamming float64 `json:"hamming_sum"`
	// Ranked bags have a label set that is neither empty nor full, so
	// average precision is defined (measure's convention); AP sums it.
	Ranked int64   `json:"ranked"`
	AP     float64 `json:"ap_sum"`
	// Instances with a known class (audit labels) and how many of them the
	// inductive prediction got right.
	Instances int64 `json:"instances"`
	Correct   int64 `json:"correct"`
	// Failed counts labeled bags the model could not annotate (an error
	// where current served): a shadow candidate that fails is worse.
	Failed int64 `json:"failed,omitempty"`
}

// Add adds o's sums to r.
func (r *Record) Add(o Record) {
	r.Bags += o.Bags
	r.Hamming += o.Hamming
	r.Ranked += o.Ranked
	r.AP += o.AP
	r.Instances += o.Instances
	r.Correct += o.Correct
	r.Failed += o.Failed
}

func mean(sum float64, n int64) float64 {
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// HammingLoss is the mean Hamming loss of the bags scored.
func (r Record) HammingLoss() float64 { return mean(r.Hamming, r.Bags) }

// AveragePrecision is the mean average precision of the ranked bags.
func (r Record) AveragePrecision() float64 { return mean(r.AP, r.Ranked) }

// InstanceAccuracy is the fraction of audit-labeled instances predicted right.
func (r Record) InstanceAccuracy() float64 { return mean(float64(r.Correct), r.Instances) }

// Score scores the inductive prediction p of one bag against the bag's
// labels, with the conventions of package measure (so the live figures and
// the offline ones agree). q is the number of classes. A bag without bag
// labels scores nothing.
func Score(truth *mil.Bag, q int, p models.Annotation) (Record, error) {
	var r Record
	if !truth.Labeled() {
		return r, nil
	}
	h, err := measure.HammingBag(truth.Labels, p.BagLabels, q)
	if err != nil {
		return Record{}, fmt.Errorf("bag %q: %w", truth.ID, err)
	}
	r.Bags, r.Hamming = 1, h
	if p.BagScores != nil {
		ap, ok, err := measure.AveragePrecisionBag(truth.Labels, p.BagScores)
		if err != nil {
			return Record{}, fmt.Errorf("bag %q: %w", truth.ID, err)
		}
		if ok {
			r.Ranked, r.AP = 1, ap
		}
	}
	if truth.InstanceLabels != nil && p.InstanceLabels != nil {
		if len(p.InstanceLabels) != len(truth.InstanceLabels) {
			return Record{}, fmt.Errorf("bag %q: %w: %d instance labels for %d instances", truth.ID, measure.ErrInvalid, len(p.InstanceLabels), len(truth.InstanceLabels))
		}
		for i, y := range truth.InstanceLabels {
			if y == mil.Unlabeled {
				continue
			}
			r.Instances++
			if p.InstanceLabels[i] == y {
				r.Correct++
			}
		}
	}
	return r, nil
}

package quality

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
)

// Policy decides a shadow candidate: once it has been scored on MinBags
// labeled bags, it is promoted when it is not worse than current, on the
// same bags, by more than Margin on any measure both have: Hamming loss
// (lower is better), average precision and instance accuracy (higher is
// better). Otherwise it is rejected: the candidate alias is cleared and the
// version stays stored for inspection.
type Policy struct {
	MinBags int64
	Margin  float64
}

// Decide returns whether the evidence suffices and, if so, whether to
// promote, with the comparison that decided.
func (p Policy) Decide(cand, cur Record) (decided, promote bool, reason string) {
	if cand.Failed > 0 && cand.Bags+cand.Failed >= p.MinBags {
		// Bags current annotates and the candidate cannot: it would
		// dead-letter them once promoted.
		return true, false, fmt.Sprintf("failed on %d of %d labeled bags that current annotated", cand.Failed, cand.Bags+cand.Failed)
	}
	if cand.Bags < p.MinBags || cur.Bags < p.MinBags {
		return false, false, fmt.Sprintf("%d of %d labeled bags scored", min(cand.Bags, cur.Bags), p.MinBags)
	}
	var worse, fine []string
	cmp := func(name string, c, k float64, lowerBetter bool) {
		if math.IsNaN(c) || math.IsNaN(k) {
			return
		}
		bad := c < k-p.Margin
		op := ">="
		if lowerBetter {
			bad, op = c > k+p.Margin, "<="
		}
		if bad {
			worse = append(worse, fmt.Sprintf("%s %.4f vs current %.4f (margin %.4f)", name, c, k, p.Margin))
		} else {
			fine = append(fine, fmt.Sprintf("%s %.4f %s %.4f ± %.4f", name, c, op, k, p.Margin))
		}
	}
	cmp("hamming loss", cand.HammingLoss(), cur.HammingLoss(), true)
	cmp("average precision", cand.AveragePrecision(), cur.AveragePrecision(), false)
	cmp("instance accuracy", cand.InstanceAccuracy(), cur.InstanceAccuracy(), false)
	if len(worse) > 0 {
		return true, false, fmt.Sprintf("worse on %d bags: %s", cand.Bags, strings.Join(worse, "; "))
	}
	return true, true, fmt.Sprintf("not worse on %d bags: %s", cand.Bags, strings.Join(fine, "; "))
}

// Verdict is a decision on a shadow candidate.
type Verdict struct {
	At        time.Time `json:"at"`
	Candidate string    `json:"candidate"`
	Current   string    `json:"current"`
	Promoted  bool      `json:"promoted"`
	Reason    string    `json:"reason"`
	// Cand and Cur are the sums the decision was made on.
	Cand Record `json:"candidate_scores"`
	Cur  Record `json:"current_scores"`
}

// CandidateRegistry is what Judge uses of the model registry.
type CandidateRegistry interface {
	Alias(ctx context.Context, alias string) (string, error)
	// Meta names a version's scores (KeyOf) without reading its blob.
	Meta(ctx context.Context, version string) (featurestore.VersionMeta, error)
	PromoteCandidate(ctx context.Context, version string, opts ...featurestore.PromoteOption) error
	ClearCandidate(ctx context.Context, version string) error
}

var _ CandidateRegistry = (*featurestore.Registry)(nil)

// Judge decides the registry's candidate, if any, on the shadow scores in
// st: it promotes or rejects it once p says the evidence suffices, records
// the verdict and returns it; nil while there is no candidate or not
// enough evidence. Several judges may run at once (every annotator): the
// registry lets one act, and the others return nil.
func Judge(ctx context.Context, reg CandidateRegistry, st *Store, p Policy, now time.Time) (*Verdict, error) {
	cand, err := reg.Alias(ctx, featurestore.AliasCandidate)
	if errors.Is(err, featurestore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cur, err := reg.Alias(ctx, featurestore.AliasCurrent)
	if err != nil {
		return nil, err
	}
	candMeta, err := reg.Meta(ctx, cand)
	if err != nil {
		return nil, err
	}
	curMeta, err := reg.Meta(ctx, cur)
	if err != nil {
		return nil, err
	}
	cs, ks, err := st.Shadow(ctx, KeyOf(candMeta), KeyOf(curMeta))
	if err != nil {
		return nil, err
	}
	decided, promote, reason := p.Decide(cs, ks)
	if !decided {
		return nil, nil
	}
	if promote {
		// Judged against cur: an operator's rollback or promotion since
		// stands (the candidate stays, to be judged against the new current).
		err = reg.PromoteCandidate(ctx, cand, featurestore.IfCurrent(cur))
	} else {
		err = reg.ClearCandidate(ctx, cand)
	}
	if errors.Is(err, featurestore.ErrNotCandidate) || errors.Is(err, featurestore.ErrCurrentChanged) {
		return nil, nil // another judge acted, or the operator did
	}
	if err != nil {
		return nil, err
	}
	v := &Verdict{At: now.UTC(), Candidate: cand, Current: cur, Promoted: promote, Reason: reason, Cand: cs, Cur: ks}
	return v, st.AddVerdict(ctx, *v)
}

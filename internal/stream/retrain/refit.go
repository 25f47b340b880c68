package retrain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/tfidf"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// refit is one refit of a retrainer's window, step by step: read the
// current model, take the window, fit a candidate, judge it against
// current on the held-out slice, store it, and promote it (or publish it
// as the shadow candidate) when it is not worse by more than the margin.
// Retrainer.Refit runs it and records its result.
type refit struct {
	r   *Retrainer
	res RefitResult

	// cur is the current model (nil: none, or one that cannot be read or
	// decoded, which the candidate replaces), curMeta its version's meta.
	cur     models.Model
	curMeta featurestore.VersionMeta
	// basis is the version current was when the candidate was compared
	// with it ("" none): the promotion is made only while it still is.
	basis string
	// compatible: cur takes the window's dimension and vocabulary.
	compatible bool

	// The window taken (snapshot).
	train, test *mil.Dataset
	featurizer  *media.Featurizer
	window      string
	offsets     map[int]int64

	cand   models.Model
	stored featurestore.VersionMeta
}

// run runs the steps in order; the first to fail ends the refit with what
// it had found so far.
func (f *refit) run(ctx context.Context) (RefitResult, error) {
	if f.r.Len() == 0 {
		return RefitResult{}, errors.New("empty window")
	}
	for _, step := range []func(context.Context) error{f.readCurrent, f.takeWindow, f.fit, f.judge, f.store, f.promote} {
		if err := step(ctx); err != nil {
			return f.res, err
		}
	}
	// After every stored version, kept or promoted: rejected refits would
	// otherwise pile up until the next promotion.
	f.res.Pruned = f.r.prune(ctx)
	return f.res, nil
}

// readCurrent reads the current model, retried while the registry is
// down; the target follows it, promoted by this retrainer or by hand.
func (f *refit) readCurrent(ctx context.Context) error {
	r := f.r
	err := r.retryRegistry(ctx, "read current model", func() error {
		f.cur, f.curMeta, f.basis = nil, featurestore.VersionMeta{}, ""
		v, err := r.cfg.Store.Alias(ctx, featurestore.AliasCurrent)
		if errors.Is(err, featurestore.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		f.basis = v
		blob, meta, err := r.cfg.Store.Get(ctx, v)
		if errors.Is(err, featurestore.ErrNotFound) {
			// Deleted or pruned since: current moved, read it again.
			return fmt.Errorf("current %s: %w", v, err)
		}
		if errors.Is(err, featurestore.ErrCorrupt) {
			// A current model the registry will not serve is replaced,
			// not retried forever.
			r.cfg.Obs.Logger.Warn("current model unreadable; evaluating the candidate alone", "err", err)
			return nil
		}
		if err != nil {
			return err
		}
		m, derr := r.cfg.Kinds.Decode(blob)
		if derr != nil {
			// A current model this build cannot decode is replaced, not
			// retried forever.
			r.cfg.Obs.Logger.Warn("current model not decodable; evaluating the candidate alone", "version", meta.Version, "err", derr)
			return nil
		}
		f.cur, f.curMeta = m, meta
		return nil
	})
	if err != nil {
		return err
	}
	if f.curMeta.Version != "" {
		r.deadLetterUnfit(ctx, r.setCurrent(f.curMeta))
	}
	return nil
}

// takeWindow takes the window as train and held-out datasets; both must
// hold bags.
func (f *refit) takeWindow(context.Context) error {
	var err error
	f.train, f.test, f.featurizer, f.window, f.offsets, err = f.r.snapshot()
	if err != nil {
		return err
	}
	if len(f.train.Bags) == 0 || len(f.test.Bags) == 0 {
		return fmt.Errorf("window too small: %d train and %d held-out bags", len(f.train.Bags), len(f.test.Bags))
	}
	f.res = RefitResult{TrainBags: len(f.train.Bags), HeldOutBags: len(f.test.Bags), TrainingWindow: f.window}
	return nil
}

// fit fits the candidate, warm from current when configured and
// compatible. A training bag the fit fails on and succeeds without is
// dead-lettered and dropped from the window (isolate).
func (f *refit) fit(ctx context.Context) error {
	r := f.r
	// Documents' passages are fitted with the IDF of the window's
	// passages, which the model keeps (KIND+tfidf).
	name := tfidf.KindName(r.cfg.Kind, f.featurizer)
	kind, err := r.cfg.Kinds.Lookup(name)
	if err != nil {
		return fmt.Errorf("bags of featurizer %s: %w", featurizerKey(f.featurizer), err)
	}
	opt := models.FitOptions{Seed: r.cfg.Seed, Params: r.cfg.Params, Workers: r.cfg.Workers}
	f.compatible = f.cur != nil && f.cur.Meta().Dim == f.train.Dim && slices.Equal(f.cur.Meta().DataClasses(), f.train.Classes)
	if r.cfg.Warm && f.compatible && f.cur.Meta().Kind == name {
		opt.Warm = f.cur
		f.res.Parent = f.curMeta.Version
	}
	start := time.Now()
	// A window with sparse bags is densified for a kind without a sparse
	// path by the kind itself (models.NewRegistry wraps its Fit).
	cand, err := kind.Fit(ctx, f.train, opt)
	if err != nil && ctx.Err() == nil {
		var isolated []isolatedBag
		if cand, isolated, err = isolate(ctx, kind, f.train, opt, err); err == nil {
			for _, b := range isolated {
				f.res.Isolated = append(f.res.Isolated, b.id)
			}
			r.dropIsolated(ctx, isolated)
			f.res.TrainBags = len(f.train.Bags)
		}
	}
	f.res.FitTime = time.Since(start)
	if err != nil {
		return fmt.Errorf("fit %s on %d bags: %w", name, len(f.train.Bags), err)
	}
	f.cand = cand
	return nil
}

// judge evaluates the candidate on the held-out slice and decides its
// promotion: over no current model, one of another contract or one that
// fails on the slice; else when its Hamming loss is within the margin of
// current's.
func (f *refit) judge(ctx context.Context) error {
	res := &f.res
	var err error
	res.Candidate, err = Evaluate(ctx, f.cand, f.test)
	if err != nil {
		return fmt.Errorf("evaluate candidate: %w", err)
	}
	switch {
	case f.cur == nil:
		res.Promoted, res.Reason = true, "no current model"
	case !f.compatible:
		res.Promoted, res.Reason = true, "current model has another vocabulary or dimension"
	default:
		res.Current, err = Evaluate(ctx, f.cur, f.test)
		if err != nil {
			res.Promoted, res.Reason = true, "current model fails on the held-out slice: "+err.Error()
			break
		}
		c, k, margin := res.Candidate[measure.HammingLoss], res.Current[measure.HammingLoss], f.r.cfg.Margin
		res.Promoted = c <= k+margin
		if res.Promoted {
			res.Reason = fmt.Sprintf("held-out Hamming loss %.4f <= %.4f + margin %.4f", c, k, margin)
		} else {
			res.Reason = fmt.Sprintf("held-out Hamming loss %.4f > %.4f + margin %.4f", c, k, margin)
		}
	}
	return nil
}

// store stores the candidate with its metrics and lineage, promoted or
// not, retried while the registry is down.
func (f *refit) store(ctx context.Context) error {
	r, res := f.r, &f.res
	blob, err := models.Encode(f.cand)
	if err != nil {
		return err
	}
	r.mu.Lock()
	excluded := slices.Clone(r.excluded)
	r.mu.Unlock()
	meta := featurestore.VersionMeta{TrainingWindow: f.window, Metrics: map[string]float64{}, Parent: res.Parent, TrainOffsets: f.offsets, Excluded: excluded,
		Featurizer: f.featurizer}
	for k, v := range res.Candidate {
		meta.Metrics["heldout_"+k] = v
	}
	for k, v := range res.Current {
		meta.Metrics["heldout_current_"+k] = v
	}
	meta.Metrics["train_bags"] = float64(res.TrainBags)
	meta.Metrics["heldout_bags"] = float64(res.HeldOutBags)
	meta.Metrics["fit_seconds"] = res.FitTime.Seconds()
	if err := r.retryRegistry(ctx, "store model", func() error {
		f.stored, err = r.cfg.Store.Put(ctx, blob, meta)
		return err
	}); err != nil {
		return err
	}
	res.Version = f.stored.Version
	return nil
}

// promote makes a candidate judged not worse current, only while current
// is still the version it was compared with; in shadow mode it publishes
// it as the candidate instead, to be judged on live bags.
func (f *refit) promote(ctx context.Context) error {
	r, res, stored := f.r, &f.res, f.stored
	if res.Promoted && r.cfg.Shadow && f.cur != nil && f.compatible {
		res.Promoted, res.Shadowed = false, true
		res.Reason += "; published as the candidate, to be judged on live bags"
		if err := r.retryRegistry(ctx, "publish candidate", func() error { return r.cfg.Store.SetCandidate(ctx, stored.Version) }); err != nil {
			return err
		}
	}
	if !res.Promoted {
		return nil
	}
	err := r.retryRegistry(ctx, "promote model", func() error {
		err := r.cfg.Store.Promote(ctx, stored.Version, featurestore.IfCurrent(f.basis))
		if errors.Is(err, featurestore.ErrCurrentChanged) {
			// An attempt whose reply was lost to an outage may have
			// committed: then current is the candidate itself.
			if v, aerr := r.cfg.Store.Alias(ctx, featurestore.AliasCurrent); aerr == nil && v == stored.Version {
				return nil
			}
		}
		return err
	})
	switch {
	case errors.Is(err, featurestore.ErrCurrentChanged), errors.Is(err, featurestore.ErrIncompatible):
		// Current moved while the candidate was fitted (an operator's
		// rollback or promotion, another retrainer): the comparison no
		// longer holds, and undoing the other's choice is worse than
		// waiting for the next refit, which compares with the new
		// current. Or the guard refused a candidate of another contract,
		// which only an operator may force.
		res.Promoted = false
		res.Reason += "; not promoted: " + err.Error()
		r.cfg.Obs.Logger.Warn("candidate dropped", "version", stored.Version, "compared_with", orNone(f.basis), "err", err)
		return nil
	case err != nil:
		return err
	}
	if stored.TrainOffsets == nil {
		stored.TrainOffsets = f.offsets
	}
	r.deadLetterUnfit(ctx, r.setCurrent(stored))
	return nil
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

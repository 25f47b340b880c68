package quality

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/sample"
	"github.com/mimlstream/mimlstream/internal/stream/service"
)

// Registry is what a Tracker reads of the model registry: the aliases, the
// candidate's blob, and (for judging) the candidate operations.
type Registry interface {
	CandidateRegistry
	Get(ctx context.Context, version string) ([]byte, featurestore.VersionMeta, error)
}

var _ Registry = (*featurestore.Registry)(nil)

// candidateSubscriber is a Registry that announces candidate changes
// (featurestore.Registry does); a Tracker over one follows them at once.
type candidateSubscriber interface {
	SubscribeCandidate(ctx context.Context) (<-chan string, error)
}

var _ candidateSubscriber = (*featurestore.Registry)(nil)

// Config configures a Tracker.
type Config struct {
	Store    *Store
	Registry Registry
	Kinds    *models.Registry
	// SampleRate is the fraction of labeled bags scored, chosen by a hash
	// of the bag id, so every instance, the candidate and a redelivery
	// pick the same bags. Scoring costs one inductive annotation per model
	// (current, and the candidate when there is one). 0 turns scoring off.
	SampleRate float64
	// Window is the rolling window of the exported gauges (<= 0: 10 min).
	Window time.Duration
	// Interval is how often scores are written to Redis, the candidate
	// alias is checked and the gauges are refreshed (<= 0: 2 s).
	Interval time.Duration
	// Policy, when non-nil, makes this instance judge the candidate
	// (Judge); the registry lets one judge act when several do.
	Policy *Policy
	Obs    service.Observability
}

// Tracker scores an annotator's model versions on live labeled bags and
// runs the registry's candidate in shadow. Observe is the annotator's hook;
// Run writes the scores to Redis, follows the candidate alias and exports
// gauges labeled by alias (current, previous, candidate): a bounded label
// set, whatever the version ids. Current and candidate are over the rolling
// window; previous, no longer scored, over its whole time as current.
type Tracker struct {
	cfg    Config
	log    *slog.Logger
	shadow atomic.Pointer[shadowModel]

	mu      sync.Mutex
	pending map[string]Record       // version key (KeyOf) -> sums not yet in Redis
	pairs   map[[2]string][2]Record // {candidate, current} keys -> their sums on the same bags
	// shown is what the gauges export, by alias.
	shown map[string]Record

	scored metric.Int64Counter
	failed metric.Int64Counter
	// lastErr avoids logging the same Redis failure every interval.
	lastErr string
}

type shadowModel struct {
	model models.Model
	meta  featurestore.VersionMeta
}

// Aliases exported as the alias label, in order.
var aliasLabels = []string{featurestore.AliasCurrent, featurestore.AliasPrevious, featurestore.AliasCandidate}

// New returns a tracker and registers its metrics.
func New(cfg Config) (*Tracker, error) {
	if cfg.Store == nil || cfg.Registry == nil || cfg.Kinds == nil {
		return nil, errors.New("quality: store, registry and model kinds are required")
	}
	if cfg.SampleRate < 0 || cfg.SampleRate > 1 || math.IsNaN(cfg.SampleRate) {
		return nil, fmt.Errorf("quality: sample rate %v outside [0, 1]", cfg.SampleRate)
	}
	if cfg.Window <= 0 {
		cfg.Window = 10 * time.Minute
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	cfg.Obs = cfg.Obs.WithDefaults()
	t := &Tracker{cfg: cfg, log: cfg.Obs.Logger, pending: map[string]Record{}, pairs: map[[2]string][2]Record{}, shown: map[string]Record{}}
	if err := t.initMetrics(); err != nil {
		return nil, fmt.Errorf("quality metrics: %w", err)
	}
	return t, nil
}

func (t *Tracker) initMetrics() error {
	mt := t.cfg.Obs.Meter.Meter(service.Instrumentation)
	var err error
	var errs []error
	t.scored, err = mt.Int64Counter("mimlstream.annotator.live.scored", metric.WithUnit("{bag}"),
		metric.WithDescription("Labeled bags whose inductive prediction was scored against their labels, by alias (current, candidate)."))
	errs = append(errs, err)
	t.failed, err = mt.Int64Counter("mimlstream.annotator.live.score_errors", metric.WithUnit("{bag}"),
		metric.WithDescription("Labeled bags that could not be scored (the inductive annotation failed), by alias."))
	errs = append(errs, err)
	hl, err := mt.Float64ObservableGauge("mimlstream.annotator.live.hamming_loss",
		metric.WithDescription("Hamming loss of the inductive predictions on live labeled bags over the rolling window, all annotators, by alias."))
	errs = append(errs, err)
	ap, err := mt.Float64ObservableGauge("mimlstream.annotator.live.average_precision",
		metric.WithDescription("Average precision of the inductive predictions on live labeled bags over the rolling window, all annotators, by alias."))
	errs = append(errs, err)
	acc, err := mt.Float64ObservableGauge("mimlstream.annotator.live.instance_accuracy",
		metric.WithDescription("Instance accuracy of the inductive predictions on live bags with audit instance labels over the rolling window, all annotators, by alias."))
	errs = append(errs, err)
	bags, err := mt.Int64ObservableGauge("mimlstream.annotator.live.window_bags", metric.WithUnit("{bag}"),
		metric.WithDescription("Labeled bags scored in the rolling window, all annotators, by alias."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Counters exist from the start, so a rate over them is defined
	// before the first labeled bag.
	for _, a := range []string{featurestore.AliasCurrent, featurestore.AliasCandidate} {
		t.scored.Add(context.Background(), 0, metric.WithAttributes(attribute.String("alias", a)))
		t.failed.Add(context.Background(), 0, metric.WithAttributes(attribute.String("alias", a)))
	}
	_, err = mt.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, a := range aliasLabels {
			r, ok := t.shown[a]
			if !ok {
				continue
			}
			attr := metric.WithAttributes(attribute.String("alias", a))
			o.ObserveInt64(bags, r.Bags, attr)
			// An undefined mean is left out rather than exported as NaN,
			// which would break comparisons in alert rules.
			for g, v := range map[metric.Float64Observable]float64{hl: r.HammingLoss(), ap: r.AveragePrecision(), acc: r.InstanceAccuracy()} {
				if !math.IsNaN(v) {
					o.ObserveFloat64(g, v, attr)
				}
			}
		}
		return nil
	}, hl, ap, acc, bags)
	return err
}

// Observe is the annotator's hook, called for every bag it annotated with
// the model it served (m, version meta). A sampled bag with bag labels gets
// an inductive annotation from m, and from the shadow candidate when there
// is one of the same dimension and classes, each scored against the labels.
// Only sums in memory change here; Run writes them to Redis.
func (t *Tracker) Observe(ctx context.Context, m models.Model, meta featurestore.VersionMeta, bag *mil.Bag) {
	if !bag.Labeled() || t.cfg.SampleRate == 0 || sample.Unit("quality", bag.ID) >= t.cfg.SampleRate {
		return
	}
	cur, ok := t.score(ctx, m, meta, bag, featurestore.AliasCurrent)
	if !ok {
		return
	}
	sh := t.shadow.Load()
	shadowed := sh != nil && sh.meta.Version != meta.Version && sh.meta.Dim == meta.Dim && slices.Equal(sh.meta.Classes, meta.Classes)
	var cand Record
	candOK := false
	if shadowed {
		cand, candOK = t.score(ctx, sh.model, sh.meta, bag, featurestore.AliasCandidate)
		if !candOK {
			// Counted against the candidate, with no score for either.
			cand = Record{Failed: 1}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.pending[KeyOf(meta)]
	r.Add(cur)
	t.pending[KeyOf(meta)] = r
	if shadowed {
		if candOK {
			r := t.pending[KeyOf(sh.meta)]
			r.Add(cand)
			t.pending[KeyOf(sh.meta)] = r
		}
		k := [2]string{KeyOf(sh.meta), KeyOf(meta)}
		p := t.pairs[k]
		p[0].Add(cand)
		if candOK {
			p[1].Add(cur)
		}
		t.pairs[k] = p
	}
}

func (t *Tracker) score(ctx context.Context, m models.Model, meta featurestore.VersionMeta, bag *mil.Bag, alias string) (Record, bool) {
	attr := metric.WithAttributes(attribute.String("alias", alias))
	// The candidate may be of a kind without a sparse path where the
	// current one has one: m, decoded by the kinds' registry, densifies a
	// sparse bag itself when its kind needs it.
	ann, err := m.Annotate(ctx, bag, models.Inductive)
	if err == nil {
		var r Record
		// Over the data's classes, as the retrainer's held-out check
		// scores (models.Annotation.OverClasses).
		q := len(meta.Classes) - len(meta.ImplicitClasses)
		if r, err = Score(bag, q, ann.OverClasses(q)); err == nil {
			t.scored.Add(ctx, 1, attr)
			return r, true
		}
	}
	t.failed.Add(ctx, 1, attr)
	t.log.Debug("live quality: bag not scored", "bag", bag.ID, "version", meta.Version, "alias", alias, "err", err)
	return Record{}, false
}

// Shadow returns the version run in shadow, or "".
func (t *Tracker) Shadow() string {
	if sh := t.shadow.Load(); sh != nil {
		return sh.meta.Version
	}
	return ""
}

// Run writes the scores to Redis, follows the candidate alias, refreshes
// the gauges and (with a Policy) judges the candidate, every Interval,
// until ctx ends; then writes what is left. Redis failures keep the sums
// in memory for the next attempt; they never stop the annotator.
func (t *Tracker) Run(ctx context.Context) error {
	tick := time.NewTicker(t.cfg.Interval)
	defer tick.Stop()
	// A candidate set by hand is taken into shadow when announced, not at
	// the next tick; the ticks still follow it when a note is lost.
	var notes <-chan string
	if cs, ok := t.cfg.Registry.(candidateSubscriber); ok {
		if ch, err := cs.SubscribeCandidate(ctx); err == nil {
			notes = ch
		} else {
			t.log.Warn("candidate notifications unavailable; following the candidate every interval", "err", err)
		}
	}
	t.Step(ctx)
	for {
		select {
		case _, ok := <-notes:
			if !ok {
				notes = nil
				continue
			}
			if err := t.followCandidate(ctx); err != nil {
				t.log.Warn("live quality: candidate not followed", "err", err)
			}
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := t.Flush(fctx); err != nil {
				t.log.Warn("live quality scores not written at shutdown", "err", err)
			}
			return nil
		case <-tick.C:
			t.Step(ctx)
		}
	}
}

// Step is one round of Run.
func (t *Tracker) Step(ctx context.Context) {
	err := errors.Join(t.Flush(ctx), t.followCandidate(ctx), t.refresh(ctx), t.judge(ctx))
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	t.mu.Lock()
	changed := msg != t.lastErr
	t.lastErr = msg
	t.mu.Unlock()
	switch {
	case err != nil && changed:
		t.log.Warn("live quality: scores or candidate not up to date", "err", err)
	case err == nil && changed:
		t.log.Info("live quality: up to date again")
	}
}

// Flush writes the sums held in memory to the store; those that fail stay
// for the next attempt.
func (t *Tracker) Flush(ctx context.Context) error {
	t.mu.Lock()
	pending, pairs := t.pending, t.pairs
	t.pending, t.pairs = map[string]Record{}, map[[2]string][2]Record{}
	t.mu.Unlock()
	now := time.Now()
	var errs []error
	keep := map[string]Record{}
	for v, r := range pending {
		if err := t.cfg.Store.Add(ctx, v, now, r); err != nil {
			errs = append(errs, err)
			keep[v] = r
		}
	}
	keepPairs := map[[2]string][2]Record{}
	for k, p := range pairs {
		if err := t.cfg.Store.AddShadow(ctx, k[0], k[1], p[0], p[1]); err != nil {
			errs = append(errs, err)
			keepPairs[k] = p
		}
	}
	if len(keep)+len(keepPairs) > 0 {
		t.mu.Lock()
		for v, r := range keep {
			x := t.pending[v]
			x.Add(r)
			t.pending[v] = x
		}
		for k, p := range keepPairs {
			x := t.pairs[k]
			x[0].Add(p[0])
			x[1].Add(p[1])
			t.pairs[k] = x
		}
		t.mu.Unlock()
	}
	return errors.Join(errs...)
}

// followCandidate loads the registry's candidate, or drops the shadow
// model when there is none.
func (t *Tracker) followCandidate(ctx context.Context) error {
	v, err := t.cfg.Registry.Alias(ctx, featurestore.AliasCandidate)
	if errors.Is(err, featurestore.ErrNotFound) {
		if old := t.shadow.Swap(nil); old != nil {
			t.log.Info("shadow candidate gone", "version", old.meta.Version)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if sh := t.shadow.Load(); sh != nil && sh.meta.Version == v {
		return nil
	}
	blob, meta, err := t.cfg.Registry.Get(ctx, v)
	if err != nil {
		return fmt.Errorf("candidate %s: %w", v, err)
	}
	m, err := t.cfg.Kinds.Decode(blob)
	if err != nil {
		return fmt.Errorf("candidate %s does not decode: %w", v, err)
	}
	t.shadow.Store(&shadowModel{model: m, meta: meta})
	t.log.Info("shadow candidate loaded", "version", v, "kind", meta.Kind)
	return nil
}

// refresh reads the rolling windows of the aliased versions for the gauges.
func (t *Tracker) refresh(ctx context.Context) error {
	shown := map[string]Record{}
	now := time.Now()
	for _, a := range aliasLabels {
		v, err := t.cfg.Registry.Alias(ctx, a)
		if errors.Is(err, featurestore.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		meta, err := t.cfg.Registry.Meta(ctx, v)
		if err != nil {
			return err
		}
		key := KeyOf(meta)
		var r Record
		if a == featurestore.AliasPrevious {
			// The previous version is no longer scored, so its window
			// empties; its whole record as current is the baseline that
			// the current version is compared with.
			r, err = t.cfg.Store.Total(ctx, key)
		} else {
			r, err = t.cfg.Store.Window(ctx, key, now, t.cfg.Window)
		}
		if err != nil {
			return err
		}
		shown[a] = r
	}
	t.mu.Lock()
	t.shown = shown
	t.mu.Unlock()
	return nil
}

func (t *Tracker) judge(ctx context.Context) error {
	if t.cfg.Policy == nil {
		return nil
	}
	v, err := Judge(ctx, t.cfg.Registry, t.cfg.Store, *t.cfg.Policy, time.Now())
	if err != nil {
		return err
	}
	if v != nil {
		t.log.Info("shadow candidate judged", "candidate", v.Candidate, "current", v.Current, "promoted", v.Promoted, "reason", v.Reason)
		if v.Promoted {
			t.shadow.Store(nil)
		}
	}
	return nil
}

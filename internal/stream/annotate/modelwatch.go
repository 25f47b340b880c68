package annotate

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/featurestore"
)

// versionNamer is implemented by stores that name the current version
// without reading its blob (featurestore.Registry.Alias): the annotator
// then reads nothing more while it serves that version, and can name a
// version it cannot serve.
type versionNamer interface {
	Alias(ctx context.Context, alias string) (string, error)
}

// fallbackStore is implemented by stores that keep the formerly current
// versions (featurestore.Registry): an annotator that holds no model and
// cannot serve current serves the newest of them that it can.
type fallbackStore interface {
	History(ctx context.Context) ([]string, error)
	Get(ctx context.Context, version string) ([]byte, featurestore.VersionMeta, error)
}

// unavailable reports whether a registry error means the registry could not
// be asked (Redis down or unreachable), as opposed to an answer about the
// current version (corrupt, undecodable, refused), which is the version's
// fault and is reported as a refusal.
func unavailable(err error) bool {
	var netErr net.Error
	var redisErr redis.Error
	return errors.As(err, &netErr) || errors.As(err, &redisErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted)
}

// Registry conditions a modelWatcher logs when they change.
const (
	registryFine        = ""
	registryWaiting     = "waiting" // no current model
	registryUnavailable = "unavailable"
)

// modelWatcher keeps an annotator's model on the registry's current
// version: it loads it at start (retrying until it exists), then reloads
// on every notification and every PollInterval. Failures keep the model
// already held: Redis down is logged when it starts and ends; a current
// version that cannot be served (any error of reading or decoding it other
// than the registry being unreachable: a corrupt blob, an undecodable
// model, a version the registry refuses) is logged once per version at
// ERROR, kept for /readyz and the model_refused gauge, and tried again at
// every poll. loaded is closed after the first successful load.
type modelWatcher struct {
	a      *Annotator
	log    *slog.Logger
	loaded chan<- struct{}
	once   sync.Once
	// state is the registry's last condition as logged.
	state string
	// notes are the registry's notifications; nil while unsubscribed.
	notes     <-chan string
	notesDown bool
}

func newModelWatcher(a *Annotator, loaded chan<- struct{}) *modelWatcher {
	return &modelWatcher{a: a, log: a.cfg.Obs.Logger.With("annotator", a.cfg.Name), loaded: loaded}
}

// run watches until ctx ends. runCtx is the annotator's context: the
// first load gives up when it ends; once a model is held, the watch goes
// on through the drain.
func (w *modelWatcher) run(ctx, runCtx context.Context) {
	a := w.a
	w.subscribe(ctx)
	w.reload(ctx)
	// Poll fast until the first model arrives, so a fresh deployment starts
	// as soon as one is promoted even without a notification.
	interval := a.cfg.PollInterval
	if a.model.Load() == nil {
		interval = min(interval, 500*time.Millisecond)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-runCtx.Done():
			if a.model.Load() == nil {
				return
			}
			runCtx = context.Background() // keep watching while draining
		case _, ok := <-w.notes:
			if !ok {
				w.notes = nil // resubscribed at the next tick
				continue
			}
			w.reload(ctx)
		case <-t.C:
			if w.notes == nil {
				w.subscribe(ctx)
			}
			w.reload(ctx)
			if interval != a.cfg.PollInterval && a.model.Load() != nil {
				interval = a.cfg.PollInterval
				t.Reset(interval)
			}
		}
	}
}

// subscribe asks for the registry's notifications, polling alone (and
// saying so once) while they cannot be had.
func (w *modelWatcher) subscribe(ctx context.Context) {
	ch, err := w.a.cfg.Store.Subscribe(ctx)
	if err != nil {
		if !w.notesDown {
			w.log.Warn("model notifications unavailable; polling", "err", err)
		}
		w.notesDown = true
		return
	}
	w.notesDown = false
	w.notes = ch
}

// reload serves the registry's current version unless it is the one
// served: named by the store's alias when it can name it (nothing more
// is read while it is unchanged), else read whole.
func (w *modelWatcher) reload(ctx context.Context) {
	a := w.a
	named := ""
	if vn, ok := a.cfg.Store.(versionNamer); ok {
		v, err := vn.Alias(ctx, featurestore.AliasCurrent)
		switch {
		case errors.Is(err, featurestore.ErrNotFound):
			w.setState(registryWaiting, err)
			return
		case err != nil:
			w.setState(registryUnavailable, err)
			return
		}
		w.setState(registryFine, nil)
		if cur := a.model.Load(); cur != nil && cur.meta.Version == v {
			a.refused.Store(nil)
			return
		}
		named = v
	}
	blob, meta, err := a.cfg.Store.Current(ctx)
	switch {
	case err == nil:
		w.setState(registryFine, nil)
	case unavailable(err):
		w.setState(registryUnavailable, err)
		return
	case errors.Is(err, featurestore.ErrNotFound) && named == "":
		w.setState(registryWaiting, err)
		return
	default:
		w.setState(registryFine, nil)
		w.refuse(named, err)
		w.fallBack(ctx, named, err)
		return
	}
	if cur := a.model.Load(); cur != nil && cur.meta.Version == meta.Version {
		a.refused.Store(nil)
		return
	}
	sm, err := decodeServed(a.cfg.Kinds, blob, meta)
	if err != nil {
		w.refuse(meta.Version, err)
		w.fallBack(ctx, meta.Version, err)
		return
	}
	w.serve(ctx, sm, nil)
}

// setState logs the registry's condition when it changes.
func (w *modelWatcher) setState(s string, err error) {
	if s == w.state {
		return
	}
	switch s {
	case registryWaiting:
		w.log.Info("waiting for a current model", "err", err)
	case registryUnavailable:
		if w.a.model.Load() != nil {
			w.log.Warn("model registry unavailable; serving the model held", "version", w.a.ModelVersion(), "err", err)
		} else {
			w.log.Warn("model registry unavailable; waiting for a model", "err", err)
		}
	default:
		if w.state == registryUnavailable {
			w.log.Info("model registry available again")
		}
	}
	w.state = s
}

// refuse records version ("" when the store cannot name it) as refused,
// logged at ERROR once per version (or, unnamed, per error).
func (w *modelWatcher) refuse(version string, err error) {
	prev := w.a.refused.Swap(&refusal{version: version, err: err})
	if prev == nil || prev.version != version || (version == "" && prev.err.Error() != err.Error()) {
		w.log.Error("refusing model version; serving the model held", "version", version, "err", err, "serving", w.a.ModelVersion())
	} else {
		w.log.Debug("model version still refused", "version", version, "err", err)
	}
}

// serve makes sm the served model and reports the swap.
func (w *modelWatcher) serve(ctx context.Context, sm *servedModel, refusal *refusal) {
	a := w.a
	meta := sm.meta
	var oldMeta *featurestore.VersionMeta
	old := ""
	if cur := a.model.Load(); cur != nil {
		oldMeta, old = &cur.meta, cur.meta.Version
	}
	was := a.contract.Load()
	now := nextContract(was, oldMeta, meta)
	// The contract and the refusal before the model: a reader
	// (readiness) that sees the new model sees what goes with it.
	a.contract.Store(now)
	a.refused.Store(refusal)
	a.model.Store(sm)
	a.m.swaps.Add(ctx, 1)
	w.log.Info("model loaded", "version", meta.Version, "kind", meta.Kind, "previous", old, "feature_cache", sm.mapper != nil && a.cache != nil)
	switch {
	case now != nil:
		w.log.Error("input contract changed", "version", meta.Version, "baseline", now.baseline.Version, "err", now.err,
			"effect", "the model served takes another input dimension or class list than the model served before (a promotion forced over an incompatible version?): bags of the old contract go to dead letters until it is restored (mimlctl models rollback)")
	case was != nil:
		w.log.Info("input contract restored", "version", meta.Version, "baseline", was.baseline.Version)
	}
	w.once.Do(func() { close(w.loaded) })
}

// fallBack, for an annotator holding no model whose current version is
// refused (a bad signature, a corrupt blob), serves the newest formerly
// current version that loads: restarting the fleet after a bad promotion
// then keeps the pipeline flowing on the last good model instead of
// stopping it. It says so at ERROR and on /readyz, and the next promotion
// or rollback that can be served ends it.
func (w *modelWatcher) fallBack(ctx context.Context, version string, cause error) {
	a := w.a
	fs, ok := a.cfg.Store.(fallbackStore)
	if !ok || a.model.Load() != nil {
		return
	}
	hist, err := fs.History(ctx)
	if err != nil {
		w.log.Warn("no fallback model: rollback history unreadable", "err", err)
		return
	}
	for _, v := range hist {
		if v == version {
			continue
		}
		blob, meta, err := fs.Get(ctx, v)
		if err != nil {
			w.log.Warn("fallback candidate refused", "version", v, "err", err)
			continue
		}
		sm, err := decodeServed(a.cfg.Kinds, blob, meta)
		if err != nil {
			w.log.Warn("fallback candidate refused", "version", v, "err", err)
			continue
		}
		w.log.Error("current model version refused; serving the newest formerly current version that verifies",
			"refused", version, "err", cause, "serving", v,
			"effect", "annotations come from an older model until current is fixed (promote or roll back to a version this annotator verifies)")
		w.serve(ctx, sm, &refusal{version: version, err: cause})
		return
	}
	w.log.Error("no formerly current version can be served either; waiting for a promotion", "refused", version, "history", hist)
}

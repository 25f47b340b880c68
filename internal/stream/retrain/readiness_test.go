package retrain

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestRefitHoldsTheWindowUntilItsTimeout holds the retrainer's window
// still while the training topic grows: a refit that does not end (the
// consumer refits between messages, so nothing more is read meanwhile).
// For many times FrozenAfter Ready stays ok (a refit holds the window on
// purpose: before, a refit longer than FrozenAfter read as a frozen
// window); at RefitTimeout the fit is cancelled, the refit counted as
// failed with ErrRefitTimeout, Ready says so, and the window catches up;
// once fits end again, a refit succeeds and Ready says ok.
func TestRefitHoldsTheWindowUntilItsTimeout(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	var fits atomic.Int32
	k := streamtest.CentroidKind()
	fit := k.Fit
	k.Fit = func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
		fits.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return fit(ctx, train, opt)
	}
	h.kinds = models.NewRegistry(k)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const frozenAfter, refitTimeout = 300 * time.Millisecond, 3 * time.Second
	r := h.retrainer(func(c *RetrainerConfig) {
		c.Every, c.MinBags = 20, 20
		c.ReachCheck = 50 * time.Millisecond
		c.FrozenAfter, c.RefitTimeout = frozenAfter, refitTimeout
	})
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	streamtest.WaitFor(t, 20*time.Second, "ready on the empty topic", func() bool { ok, _ := r.Ready(); return ok })

	ds := streamtest.SmallDataset(60)
	h.writeBags(ctx, ds, ds.Bags[:20])
	streamtest.WaitFor(t, 20*time.Second, "a refit under way", func() bool { return fits.Load() > 0 })
	start := time.Now()
	h.writeBags(ctx, ds, ds.Bags[20:])
	// Well past FrozenAfter, and the watcher has seen the topic's new end
	// many times, but the refit still runs: not frozen.
	for time.Since(start) < 4*frozenAfter {
		if ok, why := r.Ready(); !ok {
			t.Fatalf("after %.2f s of a refit (FrozenAfter %v, RefitTimeout %v) Ready says %q; want ok while the refit holds the window",
				time.Since(start).Seconds(), frozenAfter, refitTimeout, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := r.Len(); n != 20 {
		t.Fatalf("window of %d bags while the refit runs; want the 20 read before it (the test holds nothing)", n)
	}
	var why string
	streamtest.WaitFor(t, 20*time.Second, "the refit timed out", func() bool {
		var ok bool
		ok, why = r.Ready()
		return !ok && strings.Contains(why, "refit failed")
	})
	t.Logf("after %.2f s (RefitTimeout %v) Ready says %q", time.Since(start).Seconds(), refitTimeout, why)
	if !strings.Contains(why, ErrRefitTimeout.Error()) {
		t.Errorf("Ready says %q; want the refit timeout named", why)
	}
	res := r.Results()
	if len(res) == 0 || !strings.Contains(res[0].Error, ErrRefitTimeout.Error()) {
		t.Fatalf("refit results %+v; want the first failed with %v", res, ErrRefitTimeout)
	}
	close(release)
	streamtest.WaitFor(t, 20*time.Second, "the window caught up", func() bool { return r.Len() == len(ds.Bags) })
	streamtest.WaitFor(t, 30*time.Second, "ready after a refit that ends", func() bool { ok, w := r.Ready(); why = w; return ok })
	t.Logf("once fits end: window of %d bags, %d refits, Ready says %q", r.Len(), len(r.Results()), why)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestStalledReportsAStillPartition: the frozen-window check on its own
// (a reader stuck cannot be made to happen on a real broker): a partition
// that ends beyond the retrainer's position, which has not moved for
// FrozenAfter, is frozen; not while a refit runs, not within FrozenAfter
// of a refit's end, not when the position is at the end.
func TestStalledReportsAStillPartition(t *testing.T) {
	h := newHarness(t)
	const frozenAfter = 500 * time.Millisecond
	r := h.retrainer(func(c *RetrainerConfig) { c.FrozenAfter = frozenAfter })
	long := time.Now().Add(-10 * frozenAfter)
	for _, tc := range []struct {
		name       string
		next, end  int64
		moved      time.Time
		refitting  bool
		refitEnded time.Time
		frozen     bool
	}{
		{"still behind the end", 5, 10, long, false, time.Time{}, true},
		{"moved lately", 5, 10, time.Now(), false, time.Time{}, false},
		{"at the end", 10, 10, long, false, time.Time{}, false},
		{"a refit running", 5, 10, long, true, time.Time{}, false},
		{"a refit just ended", 5, 10, long, false, time.Now(), false},
		{"a refit ended long ago", 5, 10, long, false, long, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.follows.mu.Lock()
			r.follows.parts = map[int]*partitionFollow{0: {next: tc.next, end: tc.end, moved: tc.moved}}
			r.follows.refitting, r.follows.refitEnded = tc.refitting, tc.refitEnded
			r.follows.mu.Unlock()
			why, frozen := r.stalled()
			if frozen != tc.frozen || frozen && !strings.Contains(why, "window frozen: partition 0") {
				t.Fatalf("stalled() = %q, %v; want frozen %v", why, frozen, tc.frozen)
			}
		})
	}
}

// TestFrozenWindowGauge: the frozen window Ready reports is exported as
// mimlstream.retrainer.window_frozen (1 frozen, 0 not), for the alert
// rule MimlstreamRetrainerWindowFrozen.
func TestFrozenWindowGauge(t *testing.T) {
	h := newHarness(t)
	reader := sdkmetric.NewManualReader()
	const frozenAfter = 500 * time.Millisecond
	r := h.retrainer(func(c *RetrainerConfig) {
		c.FrozenAfter = frozenAfter
		c.Obs.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	})
	gauge := func() int64 {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "mimlstream.retrainer.window_frozen" {
					continue
				}
				g, ok := m.Data.(metricdata.Gauge[int64])
				if !ok || len(g.DataPoints) != 1 {
					t.Fatalf("window_frozen: %#v", m.Data)
				}
				return g.DataPoints[0].Value
			}
		}
		t.Fatal("window_frozen not exported")
		return 0
	}
	for _, tc := range []struct {
		name  string
		moved time.Time
		want  int64
	}{
		{"frozen", time.Now().Add(-10 * frozenAfter), 1},
		{"moving", time.Now(), 0},
	} {
		r.follows.mu.Lock()
		r.follows.parts = map[int]*partitionFollow{0: {next: 5, end: 10, moved: tc.moved}}
		r.follows.mu.Unlock()
		if got := gauge(); got != tc.want {
			t.Errorf("%s: window_frozen %d, want %d", tc.name, got, tc.want)
		}
	}
}

package retrain

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestReadyReportsAFrozenWindow holds the retrainer's window still while
// the training topic grows: a refit that does not end (the consumer refits
// between messages, so nothing more is read meanwhile). Ready must say the
// window is frozen, with the partition and offsets, once the position has
// not moved for FrozenAfter while the topic ends beyond it, and say ok
// again once the refit ends and the window catches up. Before, /readyz said
// ok the whole time.
func TestReadyReportsAFrozenWindow(t *testing.T) {
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
	const frozenAfter = 700 * time.Millisecond
	r := h.retrainer(func(c *RetrainerConfig) {
		c.Every, c.MinBags = 20, 20
		c.ReachCheck = 100 * time.Millisecond
		c.FrozenAfter = frozenAfter
	})
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	streamtest.WaitFor(t, 20*time.Second, "ready on the empty topic", func() bool { ok, _ := r.Ready(); return ok })

	ds := streamtest.SmallDataset(60)
	h.writeBags(ctx, ds, ds.Bags[:20])
	streamtest.WaitFor(t, 20*time.Second, "a refit under way", func() bool { return fits.Load() > 0 })
	h.writeBags(ctx, ds, ds.Bags[20:])
	start := time.Now()
	var why string
	for end := start.Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		var ok bool
		if ok, why = r.Ready(); !ok {
			break
		}
	}
	t.Logf("window of %d bags, 40 more on the topic, FrozenAfter %v: after %.2f s Ready says %q", r.Len(), frozenAfter, time.Since(start).Seconds(), why)
	if !strings.Contains(why, "window frozen") || !strings.Contains(why, "partition") {
		t.Fatalf("Ready says %q while the window is held still behind the topic; want not ready, window frozen", why)
	}
	close(release)
	streamtest.WaitFor(t, 20*time.Second, "the window caught up", func() bool { return r.Len() == len(ds.Bags) })
	var ok bool
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if ok, why = r.Ready(); ok {
			break
		}
	}
	t.Logf("once the refit ended: window of %d bags, Ready says %q", r.Len(), why)
	if !ok {
		t.Errorf("Ready says %q after the window caught up; want ok", why)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

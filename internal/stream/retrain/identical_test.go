package retrain

import (
	"context"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestIdenticalWindowNotRefitted: the same bags ingested again (new copies
// on the training topic, nothing changed) count as fresh but leave the
// window as the last refit took it, so the retrainer stores no new
// version; a bag that is new makes the next refit.
func TestIdenticalWindowNotRefitted(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ds := streamtest.SmallDataset(60)
	pub, err := ingest.NewPublisher(ingest.PublisherConfig{Brokers: h.brokers, Topics: h.topics, LabelFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if _, err := pub.PublishDataset(ctx, ds, ds.Bags[:40]); err != nil {
		t.Fatal(err)
	}
	r := h.retrainer(func(c *RetrainerConfig) { c.Every = 20 })
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	streamtest.WaitFor(t, 20*time.Second, "first refit", func() bool { return len(r.Results()) >= 1 })
	// The same 40 bags twice more: 80 fresh copies, four times Every.
	for range 2 {
		if _, err := pub.PublishDataset(ctx, ds, ds.Bags[:40]); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second)
	versions, err := h.reg.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.Results()); n != 1 || len(versions) != 1 {
		t.Fatalf("after the same bags again: %d refits, %d versions stored; want 1 and 1", n, len(versions))
	}
	// New bags change the window: refitted.
	if _, err := pub.PublishDataset(ctx, ds, ds.Bags[40:]); err != nil {
		t.Fatal(err)
	}
	streamtest.WaitFor(t, 20*time.Second, "refit on new bags", func() bool { return len(r.Results()) >= 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("80 identical copies: no refit; 20 new bags: refit %s", r.Results()[1].Version)
}

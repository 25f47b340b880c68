package retrain

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestRetrainerShadowPublishesCandidate: with Shadow, a fit that passes the
// held-out comparison becomes the registry's candidate and current stays;
// the first model, with nothing to be compared with, is promoted. It
// catches a shadow mode that promotes anyway, or never serves a first model.
func TestRetrainerShadowPublishesCandidate(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	ds := streamtest.SmallDataset(60)
	pub, err := ingest.NewPublisher(ingest.PublisherConfig{Brokers: h.brokers, Topics: h.topics, LabelFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if _, err := pub.PublishDataset(ctx, ds, ds.Bags); err != nil {
		t.Fatal(err)
	}
	r := h.retrainer(func(c *RetrainerConfig) { c.Shadow = true; c.Every = 1000 })
	if ok, msg := r.Ready(); ok || !strings.Contains(msg, "not consuming") {
		t.Errorf("Ready before Run = %v, %q", ok, msg)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = r.Run(rctx) }()
	// The window's rebuild ends with one refit: the first model.
	streamtest.WaitFor(t, 10*time.Second, "first refit", func() bool { return len(r.Results()) == 1 })
	first := r.Results()[0]
	if !first.Promoted || first.Shadowed {
		t.Fatalf("first model with --shadow: %+v, want promoted", first)
	}
	second, err := r.Refit(rctx)
	if err != nil {
		t.Fatal(err)
	}
	if second.Promoted || !second.Shadowed || !strings.Contains(second.Reason, "candidate") {
		t.Fatalf("second refit with --shadow: %+v, want published as the candidate", second)
	}
	if cur, _ := h.reg.Alias(ctx, featurestore.AliasCurrent); cur != first.Version {
		t.Errorf("current is %s, want %s kept while %s is in shadow", cur, first.Version, second.Version)
	}
	if cand, err := h.reg.Alias(ctx, featurestore.AliasCandidate); err != nil || cand != second.Version {
		t.Errorf("candidate is %q (%v), want %s", cand, err, second.Version)
	}
}

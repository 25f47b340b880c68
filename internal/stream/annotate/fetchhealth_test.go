package annotate

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestNotReadyWhileFetchesFail makes every fetch from the input topic fail
// while the topic and a leader for each of its partitions stay listed: the
// input probe sees nothing wrong, the Kafka client retries out of sight,
// and nothing is annotated. /readyz must answer 503 with the fetch error
// once every fetch has failed for StallAfter, and ok again once fetches
// succeed. Before, it answered ok throughout.
func TestNotReadyWhileFetchesFail(t *testing.T) {
	h := newHarness(t)
	c := h.faultBroker()
	ctx, cancel, ds, _ := h.withModel(20)
	const stallAfter = time.Second
	a, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) {
		c.ProbeInterval = 100 * time.Millisecond
		c.StallAfter = stallAfter
	})
	streamtest.WaitFor(t, 10*time.Second, "annotator ready", a.Ready)
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: h.topics.Annotate, Err: kerr.KafkaStorageError, Count: -1})
	start := time.Now()
	var code int
	var body string
	for end := start.Add(15 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if code, body = readyz(a); code != http.StatusOK {
			break
		}
	}
	t.Logf("every fetch failing (StallAfter %v): after %.1f s /readyz %d %q (%d fetches faulted)", stallAfter, time.Since(start).Seconds(), code, strings.TrimSpace(body), fault.Hits())
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "fetching from "+h.topics.Annotate) || !strings.Contains(body, "Kafka Storage Error") {
		t.Errorf("/readyz %d %q, want 503 naming the failing fetches and their error", code, body)
	}
	if d := time.Since(start); d < stallAfter {
		t.Errorf("not ready after %v, before StallAfter %v", d, stallAfter)
	}
	fault.Remove()
	h.publish(ctx, ingest.PublisherConfig{}, ds, ds.Bags[:5])
	anns, _ := h.collect(ctx, 5, 15*time.Second)
	streamtest.WaitFor(t, 15*time.Second, "ready again once fetches succeed", a.Ready)
	code, body = readyz(a)
	t.Logf("fetches succeeding again: %d of 5 bags annotated, /readyz %d %q", len(anns), code, strings.TrimSpace(body))
	if len(anns) != 5 {
		t.Errorf("%d of 5 bags annotated once fetches succeed", len(anns))
	}
	cancel()
	<-done
}

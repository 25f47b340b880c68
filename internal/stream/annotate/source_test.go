package annotate

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestNotReadyWithoutItsInput: an annotator whose input topic does not
// exist, or whose brokers cannot tell it where the topic's partitions
// are, annotates nothing; /readyz says so (503, with the reason) instead
// of "ok", and recovers when the input does.
func TestNotReadyWithoutItsInput(t *testing.T) {
	t.Run("topic missing", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h.publishModel(streamtest.SmallDataset(20), nil)
		h.topics.Annotate = "no-such-topic"
		a, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) { c.ProbeInterval = 100 * time.Millisecond })
		time.Sleep(3 * time.Second) // model loaded, reader started, probes made
		code, body := readyz(a)
		t.Logf("annotator on a missing topic: /readyz %d %q", code, strings.TrimSpace(body))
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "no-such-topic") {
			t.Errorf("/readyz %d %q, want 503 naming the missing topic", code, body)
		}
		cancel()
		<-done
	})
	t.Run("metadata failing", func(t *testing.T) {
		h := newHarness(t)
		c := h.faultBroker()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h.publishModel(streamtest.SmallDataset(20), nil)
		a, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) { c.ProbeInterval = 100 * time.Millisecond })
		streamtest.WaitFor(t, 10*time.Second, "annotator ready", a.Ready)
		var down atomic.Bool
		down.Store(true)
		c.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if down.Load() {
				return nil, errors.New("broker down"), true
			}
			return nil, nil, false
		})
		streamtest.WaitFor(t, 10*time.Second, "not ready while the brokers fail", func() bool { return !a.Ready() })
		code, body := readyz(a)
		t.Logf("annotator whose brokers fail: /readyz %d %q", code, strings.TrimSpace(body))
		if code != http.StatusServiceUnavailable || !strings.Contains(body, h.topics.Annotate) {
			t.Errorf("/readyz %d %q, want 503 naming the input topic", code, body)
		}
		down.Store(false)
		streamtest.WaitFor(t, 10*time.Second, "ready again", a.Ready)
		cancel()
		<-done
	})
}

package annotate

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/telemetry"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/telemetrytest"
)

// withModel makes current a centroid model of a small dataset of n bags,
// and returns a context for the test's annotators (cancelled by cancel
// or at the test's end), the dataset and the model's version.
func (h *harness) withModel(n int) (ctx context.Context, cancel context.CancelFunc, ds *mil.Dataset, version string) {
	h.t.Helper()
	ds = streamtest.SmallDataset(n)
	version = h.publishModel(ds, nil)
	ctx, cancel = context.WithCancel(h.t.Context())
	h.t.Cleanup(cancel)
	return ctx, cancel, ds, version
}

// publisher returns a publisher to the harness's brokers and topics (cfg's
// are filled in), closed at the test's end.
func (h *harness) publisher(cfg ingest.PublisherConfig) *ingest.Publisher {
	h.t.Helper()
	cfg.Brokers, cfg.Topics = h.brokers, h.topics
	p, err := ingest.NewPublisher(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { p.Close() })
	return p
}

// publish publishes bags of ds through a publisher of cfg; a failure or a
// bag rejected fails the test.
func (h *harness) publish(ctx context.Context, cfg ingest.PublisherConfig, ds *mil.Dataset, bags []mil.Bag) {
	h.t.Helper()
	if rej, err := h.publisher(cfg).PublishDataset(ctx, ds, bags); err != nil || len(rej) != 0 {
		h.t.Fatalf("publish: %v %v", rej, err)
	}
}

// stopAnnotator ends an annotator's context, as SIGTERM would, and checks
// that it returned nil.
func stopAnnotator(t *testing.T, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// observed returns a log recorder, telemetry providers and a config
// change that makes an annotator log to the one and measure through the
// other.
func observed() (*logRecorder, *telemetry.Providers, func(*AnnotatorConfig)) {
	rec := &logRecorder{}
	prov, _ := telemetrytest.NewProviders()
	return rec, prov, func(c *AnnotatorConfig) {
		c.Obs.Logger = slog.New(rec)
		c.Obs.Meter = prov.Meter
	}
}

// follow tails topics until ctx ends, calling each with every message
// under mu (lock it to read what each collects). wait waits for the tails
// to end; a tail that fails before ctx ends fails the test.
func (h *harness) follow(ctx context.Context, each func(topic string, m kafka.Message), topics ...string) (mu *sync.Mutex, wait func()) {
	mu = new(sync.Mutex)
	var wg sync.WaitGroup
	for _, topic := range topics {
		wg.Go(func() {
			err := kafkaio.Tail(ctx, h.brokers, kafkasec.Conn{}, topic, func(m kafka.Message) error {
				mu.Lock()
				defer mu.Unlock()
				each(topic, m)
				return nil
			})
			if err != nil && ctx.Err() == nil {
				h.t.Error(err)
			}
		})
	}
	return mu, wg.Wait
}

package annotate

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestOneKeysOutputsKeepTheirOrder sends one bag id five times, each copy
// its own batch, with up to 8 batches in flight, while the broker fails
// the first write of annotations with an error kafka-go does not retry
// itself (the producer retries it after a back-off). The five annotations
// must come out in the order their inputs went in. Catches a pipeline that
// writes a later batch of a key while an earlier one is being retried:
// with several writes in flight, the retried one would land last.
func TestOneKeysOutputsKeepTheirOrder(t *testing.T) {
	h := newHarness(t)
	c := h.faultBroker()
	ctx, cancel, ds, _ := h.withModel(6)
	a, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) {
		c.BatchSize, c.MaxInFlight, c.Cache = 1, 8, nil
	})
	streamtest.WaitFor(t, 10*time.Second, "annotator ready", a.Ready)
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: h.topics.Annotations, Err: kerr.TopicAuthorizationFailed})
	defer fault.Remove()
	pub, err := ingest.NewPublisher(ingest.PublisherConfig{Brokers: h.brokers, Topics: h.topics, LabelFraction: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	const copies = 5
	for range copies {
		if _, err := pub.PublishDataset(ctx, ds, []mil.Bag{ds.Bags[0]}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // distinct produce timestamps
	}

	var mu sync.Mutex
	var got []time.Time
	tctx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	err = kafkaio.Tail(tctx, h.brokers, kafkasec.Conn{}, h.topics.Annotations, func(m kafka.Message) error {
		var ann wire.AnnotationMessage
		if err := json.Unmarshal(m.Value, &ann); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, *ann.IngestedAt)
		if len(got) == copies {
			return kafkaio.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != copies {
		t.Fatalf("%d annotations of the bag, want %d", len(got), copies)
	}
	if n := fault.Hits(); n != 1 {
		t.Fatalf("the fault failed %d writes, want 1: the test did not retry a write", n)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Before(got[i-1]) {
			t.Fatalf("annotations out of input order: ingested at %v", got)
		}
	}
	stopAnnotator(t, cancel, done)
}

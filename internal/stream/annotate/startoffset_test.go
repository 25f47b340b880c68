package annotate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestStartOffsetLatest: a new group started with --start-offset latest
// annotates the bags written after it joined, none of those the topic held
// before (earliest, the default, would re-annotate the whole retention).
func TestStartOffsetLatest(t *testing.T) {
	h := newHarness(t)
	ctx, cancel, ds, _ := h.withModel(4)
	w := &kafka.Writer{Addr: kafka.TCP(h.brokers...), Topic: h.topics.Annotate, RequiredAcks: kafka.RequireAll, Balancer: &kafka.Hash{},
		BatchTimeout: time.Millisecond}
	defer w.Close()
	send := func(id string) {
		m := wire.NewBagMessage(&ds.Bags[0], ds.Name, ds.Dim, ds.Classes, false)
		m.ID = id
		b, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteMessages(ctx, kafka.Message{Key: []byte(id), Value: b}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		send(fmt.Sprintf("old-%02d", i))
	}
	a, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) { c.StartOffset = kafkaio.StartLatest })
	streamtest.WaitFor(t, 30*time.Second, "annotator ready", a.Ready)

	seen := map[string]bool{}
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	mu, _ := h.follow(rctx, func(_ string, m kafka.Message) {
		var ann wire.AnnotationMessage
		if json.Unmarshal(m.Value, &ann) == nil {
			seen[ann.BagID] = true
		}
	}, h.topics.Annotations)
	// The group's partitions start where they are when it is assigned
	// them: new bags go on until every partition has shown one annotated.
	count := func(prefix string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for id := range seen {
			if strings.HasPrefix(id, prefix) {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; count("new-") < 10; i++ {

		if time.Now().After(deadline) {
			t.Fatalf("only %d new bags annotated", count("new-"))
		}
		send(fmt.Sprintf("new-%03d", i))
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // old bags, if read, would be annotated by now
	if n := count("old-"); n != 0 {
		t.Fatalf("%d of the 30 bags written before the group joined were annotated", n)
	}
	t.Logf("%d new bags annotated, none of the 30 old ones", count("new-"))
	stopAnnotator(t, cancel, done)
}

package annotate

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestOutputsKeyedByBagID: annotations and dead letters are keyed by the
// bag id, whatever key the bag arrived under, so a compacted output topic
// keeps one record per bag: two bags under one key keep two annotations,
// and a keyless bag's outputs have a key (a broker refuses a keyless
// record on a compacted topic). A message too broken to name its bag is
// keyed by where it lies (topic, partition, offset).
func TestOutputsKeyedByBagID(t *testing.T) {
	h := newHarness(t)
	ctx, cancel, ds, _ := h.withModel(4)
	enc := func(i int, dim int) []byte {
		m := wire.NewBagMessage(&ds.Bags[i], "toy", ds.Dim, ds.Classes, false)
		m.Dim = dim
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	msgs := []kafka.Message{
		{Topic: h.topics.Annotate, Key: []byte("shared"), Value: enc(0, ds.Dim)},
		{Topic: h.topics.Annotate, Key: []byte("shared"), Value: enc(1, ds.Dim)},
		{Topic: h.topics.Annotate, Value: enc(2, ds.Dim)},
		{Topic: h.topics.Annotate, Key: []byte("shared"), Value: enc(3, ds.Dim+1)}, // dead letter: dimension
		{Topic: h.topics.Annotate, Value: []byte(`{"schema_version":1,"id":`)},     // dead letter: malformed, no id
	}
	w := kafkaio.NewWriter(h.brokers, kafkasec.Conn{})
	defer w.Close()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	_, done := h.startAnnotator(ctx, "a1", nil)
	keys := map[string][]string{} // topic -> keys
	n := 0
	tctx, tcancel := context.WithTimeout(ctx, 20*time.Second)
	defer tcancel()
	_, wait := h.follow(tctx, func(topic string, m kafka.Message) {
		keys[topic] = append(keys[topic], string(m.Key))
		if n++; n == len(msgs) {
			tcancel()
		}
	}, h.topics.Annotations, h.topics.DeadLetter)
	wait()
	t.Logf("annotation keys %q; dead-letter keys %q", keys[h.topics.Annotations], keys[h.topics.DeadLetter])
	want := map[string]bool{ds.Bags[0].ID: true, ds.Bags[1].ID: true, ds.Bags[2].ID: true}
	if got := keys[h.topics.Annotations]; len(got) != 3 || !want[got[0]] || !want[got[1]] || !want[got[2]] || got[0] == got[1] || got[1] == got[2] || got[0] == got[2] {
		t.Errorf("annotation keys %q, want the bag ids %v", got, want)
	}
	dl := keys[h.topics.DeadLetter]
	if len(dl) != 2 || !(dl[0] == ds.Bags[3].ID || dl[1] == ds.Bags[3].ID) || dl[0] == "" || dl[1] == "" {
		t.Errorf("dead-letter keys %q, want %s and a key for the malformed message", dl, ds.Bags[3].ID)
	}
	stopAnnotator(t, cancel, done)
}

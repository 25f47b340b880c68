package annotate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestAnnotatorChecksHeaders: a bag whose content type the pipeline does
// not read, whose value contradicts its content type, or whose schema
// version this build does not read is dead-lettered with its own reason
// (content_type, schema_version), not as malformed_json nor silently read
// as JSON version 1; a bag without headers is JSON, version 1, and
// annotated.
func TestAnnotatorChecksHeaders(t *testing.T) {
	h := newHarness(t)
	ctx, cancel, ds, _ := h.withModel(4)
	_, done := h.startAnnotator(ctx, "a1", nil)

	bag := func(id string) []byte {
		m := wire.NewBagMessage(&ds.Bags[0], ds.Name, ds.Dim, ds.Classes, false)
		m.ID = id
		b, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	hdr := func(kv ...string) []kafka.Header {
		var out []kafka.Header
		for i := 0; i < len(kv); i += 2 {
			out = append(out, kafka.Header{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return out
	}
	msgs := []kafka.Message{
		{Key: []byte("text"), Value: bag("text"), Headers: hdr(wire.HeaderContentType, "text/plain", wire.HeaderSchemaVersion, "1")},
		{Key: []byte("json-as-proto"), Value: bag("json-as-proto"), Headers: hdr(wire.HeaderContentType, wire.ContentTypeProtobuf, wire.HeaderSchemaVersion, "1")},
		{Key: []byte("v9"), Value: bag("v9"), Headers: hdr(wire.HeaderContentType, wire.ContentTypeJSON, wire.HeaderSchemaVersion, "9")},
		{Key: []byte("plain"), Value: bag("plain")},
	}
	w := &kafka.Writer{Addr: kafka.TCP(h.brokers...), Topic: h.topics.Annotate, RequiredAcks: kafka.RequireAll, Balancer: &kafka.Hash{}}
	defer w.Close()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	read := func(topic string, n int) []kafka.Message {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: h.brokers, Topic: topic, GroupID: fmt.Sprintf("read-%s-%d", topic, time.Now().UnixNano()),
			StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond})
		defer r.Close()
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		defer rcancel()
		var out []kafka.Message
		for len(out) < n {
			m, err := r.ReadMessage(rctx)
			if err != nil {
				t.Fatalf("%s: %d messages, want %d: %v", topic, len(out), n, err)
			}
			out = append(out, m)
		}
		return out
	}
	var reasons []string
	for _, m := range read(h.topics.DeadLetter, 3) {
		var d wire.DeadLetter
		if err := json.Unmarshal(m.Value, &d); err != nil {
			t.Fatal(err)
		}
		reasons = append(reasons, string(d.Reason))
		t.Logf("dead letter %s: %s: %s", m.Key, d.Reason, d.Error)
	}
	slices.Sort(reasons)
	if want := []string{"content_type", "content_type", "schema_version"}; !slices.Equal(reasons, want) {
		t.Errorf("dead-letter reasons %q, want %q", reasons, want)
	}
	var ann wire.AnnotationMessage
	if err := json.Unmarshal(read(h.topics.Annotations, 1)[0].Value, &ann); err != nil || ann.BagID != "plain" {
		t.Errorf("annotation %+v %v, want the bag without headers annotated", ann, err)
	}
	stopAnnotator(t, cancel, done)
}

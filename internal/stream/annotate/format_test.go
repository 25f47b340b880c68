package annotate

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestAnnotatorMixedFormats: on one topic, bags in JSON and in the binary
// encoding (each named by its content-type header) are all annotated by an
// annotator writing binary annotations, which say so in their header and
// decode to the right bag, mode and instance labels; a binary bag with a
// NaN is dead-lettered as JSON, non_finite, its original marked binary.
// Catches the annotator decoding by its own setting instead of each
// message's header, an annotation sent under the wrong content type, and
// a check the binary path skips.
func TestAnnotatorMixedFormats(t *testing.T) {
	h := newHarness(t)
	ctx, cancel, ds, version := h.withModel(40)
	_, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) { c.Format = wire.FormatProtobuf })

	var pubs []*ingest.Publisher
	for _, f := range []wire.Format{wire.FormatJSON, wire.FormatProtobuf} {
		pub, err := ingest.NewPublisher(ingest.PublisherConfig{Brokers: h.brokers, Topics: h.topics, LabelFraction: 0.5, Seed: 1, Format: f})
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		pubs = append(pubs, pub)
	}
	half := len(ds.Bags) / 2
	for i, bags := range [][]int{{0, half}, {half, len(ds.Bags)}} {
		if rej, err := pubs[i].PublishDataset(ctx, ds, ds.Bags[bags[0]:bags[1]]); err != nil || len(rej) != 0 {
			t.Fatalf("publish: %v %v", rej, err)
		}
	}
	nan := wire.BagMessage{SchemaVersion: 1, ID: "bad-nan", Dim: 2, Instances: [][]float64{{1, math.NaN()}}}
	w := &kafka.Writer{Addr: kafka.TCP(h.brokers...), Topic: h.topics.Annotate, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte(nan.ID), Value: nan.AppendProto(nil),
		Headers: []kafka.Header{{Key: wire.HeaderContentType, Value: []byte(wire.ContentTypeProtobuf)}}}); err != nil {
		t.Fatal(err)
	}

	tctx, tcancel := context.WithTimeout(ctx, 30*time.Second)
	defer tcancel()
	var mu sync.Mutex
	anns := map[string]wire.AnnotationMessage{}
	var dead []kafka.Message
	var wg sync.WaitGroup
	for _, topic := range []string{h.topics.Annotations, h.topics.DeadLetter} {
		wg.Go(func() {
			err := kafkaio.Tail(tctx, h.brokers, kafkasec.Conn{}, topic, func(m kafka.Message) error {
				mu.Lock()
				defer mu.Unlock()
				if topic == h.topics.DeadLetter {
					dead = append(dead, m)
				} else {
					if ct := kafkaio.ContentType(m.Headers); ct != wire.ContentTypeProtobuf {
						t.Errorf("annotation %s: content type %q", m.Key, ct)
					}
					a, err := wire.DecodeAnnotation(kafkaio.ContentType(m.Headers), m.Value)
					if err != nil {
						return err
					}
					anns[a.BagID] = a
				}
				if len(anns)+len(dead) >= len(ds.Bags)+1 {
					tcancel()
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(anns) != len(ds.Bags) || len(dead) != 1 {
		t.Fatalf("%d annotations of %d bags, %d dead letters of 1", len(anns), len(ds.Bags), len(dead))
	}
	for _, b := range ds.Bags {
		a := anns[b.ID]
		wantMode := models.Inductive
		if pubs[0].KeepLabels(b.ID) {
			wantMode = models.Transductive
		}
		if a.Mode != string(wantMode) || a.ModelVersion != version || len(a.BagScores) != len(ds.Classes) || len(a.InstanceScores) != len(b.Instances) {
			t.Errorf("bag %s: %+v", b.ID, a)
		}
		for i, l := range b.InstanceLabels {
			if a.InstanceLabels[i] != l {
				t.Errorf("bag %s instance %d: label %d, want %d (separable toy data)", b.ID, i, a.InstanceLabels[i], l)
			}
		}
	}
	var d wire.DeadLetter
	m := dead[0]
	if err := json.Unmarshal(m.Value, &d); err != nil || d.Reason != wire.ReasonNonFinite || !strings.Contains(d.Error, "NaN") {
		t.Errorf("dead letter %+v %v", d, err)
	}
	hdr := map[string]string{}
	for _, x := range m.Headers {
		hdr[x.Key] = string(x.Value)
	}
	if hdr[wire.HeaderContentType] != wire.ContentTypeJSON || hdr[wire.HeaderOriginalContentType] != wire.ContentTypeProtobuf {
		t.Errorf("dead letter headers %v", hdr)
	}
	stopAnnotator(t, cancel, done)
}

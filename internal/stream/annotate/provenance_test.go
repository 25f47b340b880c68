package annotate

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestAnnotationCarriesProvenance: a media bag's provenance (media,
// featurizer, one region per instance) comes back unchanged in its
// annotation, so instance_labels[i] can be painted on regions[i].
func TestAnnotationCarriesProvenance(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ds := streamtest.SmallDataset(20)
	h.publishModel(ds, nil)
	_, done := h.startAnnotator(ctx, "a1", nil)
	defer func() { cancel(); <-done }()

	b := ds.Bags[0]
	msg := wire.NewBagMessage(&b, ds.Name, ds.Dim, ds.Classes, false)
	md := media.Identify([]byte("a photo"), "a.jpg", "image/jpeg")
	msg.Media = &md
	msg.Featurizer = &media.Featurizer{Name: "photo-regions", Version: "1"}
	n := len(b.Instances)
	for k := range n {
		mask := make([]bool, n) // an n x 1 frame, region k its pixel k
		mask[k] = true
		r := media.EncodeMask(mask, n, 1)
		box := r.BBox()
		msg.Regions = append(msg.Regions, media.Region{BBox: &box, Mask: &r})
	}
	raw, err := msg.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(h.brokers...), Topic: h.topics.Annotate, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte(msg.ID), Value: raw}); err != nil {
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 30*time.Second)
	defer tcancel()
	var got *wire.AnnotationMessage
	err = kafkaio.Tail(tctx, h.brokers, kafkasec.Conn{}, h.topics.Annotations, func(m kafka.Message) error {
		a, err := wire.DecodeAnnotation(kafkaio.ContentType(m.Headers), m.Value)
		if err != nil {
			return err
		}
		got = &a
		tcancel()
		return nil
	})
	if err != nil && got == nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("no annotation")
	}
	if !reflect.DeepEqual(got.Media, msg.Media) || !reflect.DeepEqual(got.Featurizer, msg.Featurizer) || !reflect.DeepEqual(got.Regions, msg.Regions) {
		t.Fatalf("annotation provenance %+v %+v %+v, want the bag's", got.Media, got.Featurizer, got.Regions)
	}
	if len(got.InstanceLabels) != len(got.Regions) {
		t.Fatalf("%d instance labels for %d regions", len(got.InstanceLabels), len(got.Regions))
	}
}

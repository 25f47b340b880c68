package annotate

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
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
	f := media.Featurizer{Name: "photo-regions", Version: "1"}
	if err := h.reg.Promote(ctx, putModel(t, h, ds, &f), featurestore.Force()); err != nil {
		t.Fatal(err)
	}
	_, done := h.startAnnotator(ctx, "a1", nil)
	defer func() { cancel(); <-done }()

	b := ds.Bags[0]
	msg := wire.NewBagMessage(&b, ds.Name, ds.Dim, ds.Classes, false)
	md := media.Identify([]byte("a photo"), "a.jpg", "image/jpeg")
	msg.Media = &md
	msg.Featurizer = &f
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

// TestFeaturizerMismatchRefused: a model version fitted on one
// featurizer's bags annotates bags of that featurizer and dead-letters,
// with reason featurizer, a bag of another featurizer and a bag of vectors
// from the sender (no featurizer), whose dimensions are the same; and
// promoting a version of another featurizer over it is refused as
// incompatible unless forced.
func TestFeaturizerMismatchRefused(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ds := streamtest.SmallDataset(20)
	mine := media.Featurizer{Name: "photo-regions", Version: "1", Params: map[string]string{"segmenter": "grid"}}
	other := media.Featurizer{Name: "photo-regions", Version: "1", Params: map[string]string{"segmenter": "regions"}}
	v1 := putModel(t, h, ds, &mine)
	if err := h.reg.Promote(ctx, v1, featurestore.Force()); err != nil {
		t.Fatal(err)
	}
	v2 := putModel(t, h, ds, &other)
	if err := h.reg.Promote(ctx, v2); !errors.Is(err, featurestore.ErrIncompatible) || !strings.Contains(err.Error(), "featurizer") {
		t.Fatalf("promoting a version of another featurizer: %v, want ErrIncompatible naming the featurizer", err)
	}
	_, done := h.startAnnotator(ctx, "a1", nil)
	defer func() { cancel(); <-done }()

	w := &kafka.Writer{Addr: kafka.TCP(h.brokers...), Topic: h.topics.Annotate, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	for i, f := range []*media.Featurizer{&mine, &other, nil} {
		b := ds.Bags[i]
		msg := wire.NewBagMessage(&b, ds.Name, ds.Dim, ds.Classes, false)
		msg.ID = []string{"same", "other", "none"}[i]
		msg.Featurizer = f
		raw, err := msg.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteMessages(ctx, kafka.Message{Key: []byte(msg.ID), Value: raw}); err != nil {
			t.Fatal(err)
		}
	}
	anns, dead := h.collect(ctx, 3, 30*time.Second)
	if len(anns["same"]) != 1 || len(dead) != 2 {
		t.Fatalf("%d annotations of the matching bag, %d dead letters; want 1 and 2", len(anns["same"]), len(dead))
	}
	for _, d := range dead {
		if d.Reason != wire.ReasonFeaturizer || !strings.Contains(d.Error, "featurizer mismatch") {
			t.Errorf("dead letter of %s: %s %q, want reason featurizer", d.Key, d.Reason, d.Error)
		}
	}
}

// putModel stores a model of ds fitted on featurizer f's bags and returns
// its version.
func putModel(t *testing.T, h *harness, ds *mil.Dataset, f *media.Featurizer) string {
	t.Helper()
	m, err := streamtest.CentroidKind().Fit(context.Background(), ds, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := models.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := h.reg.Put(context.Background(), blob, featurestore.VersionMeta{Featurizer: f})
	if err != nil {
		t.Fatal(err)
	}
	return meta.Version
}

package annotate

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// slowModel makes every annotation take a while, so a shutdown can land in
// the middle of a batch.
type slowModel struct {
	models.Model
	delay time.Duration
}

func (s slowModel) Meta() models.Meta {
	m := s.Model.Meta()
	m.Kind = "slow"
	return m
}

func (s slowModel) Annotate(ctx context.Context, b *mil.Bag, mode models.Mode) (models.Annotation, error) {
	time.Sleep(s.delay)
	return s.Model.Annotate(ctx, b, mode)
}

func slowKind(delay time.Duration) models.Kind {
	inner := streamtest.CentroidKind()
	return models.Kind{Name: "slow",
		Fit: func(ctx context.Context, d *mil.Dataset, o models.FitOptions) (models.Model, error) {
			m, err := inner.Fit(ctx, d, o)
			return slowModel{m, delay}, err
		},
		Decode: func(meta models.Meta, state []byte) (models.Model, error) {
			meta.Kind = streamtest.KindName
			m, err := inner.Decode(meta, state)
			return slowModel{m, delay}, err
		},
	}
}

// TestShutdownMidBatchCompletesTheBatch cancels the annotator while a batch
// is being annotated: the batch is still written and committed, so a
// successor in the group redoes none of it.
func TestShutdownMidBatchCompletesTheBatch(t *testing.T) {
	h := newHarness(t)
	kind := slowKind(150 * time.Millisecond)
	h.kinds = models.NewRegistry(kind)
	ds := streamtest.SmallDataset(6)
	m, err := kind.Fit(context.Background(), ds, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blob, _ := models.Encode(m)
	meta, err := h.reg.Put(context.Background(), blob, featurestore.VersionMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.reg.Promote(context.Background(), meta.Version); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	one := func(c *AnnotatorConfig) {
		c.Workers, c.BatchSize, c.BatchWait, c.Cache = 1, 5, 200*time.Millisecond, nil
	}
	a, done := h.startAnnotator(ctx, "first", one)
	streamtest.WaitFor(t, 10*time.Second, "ready", a.Ready)
	pub := h.publisher(ingest.PublisherConfig{LabelFraction: 1})
	if _, err := pub.PublishDataset(context.Background(), ds, ds.Bags[:5]); err != nil {
		t.Fatal(err)
	}
	// The five bags take 750 ms in one batch; stop in the middle of it.
	time.Sleep(500 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("annotator did not stop")
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	_, done2 := h.startAnnotator(ctx2, "second", one)
	if _, err := pub.PublishDataset(context.Background(), ds, ds.Bags[5:]); err != nil {
		t.Fatal(err)
	}
	anns, _ := h.collect(context.Background(), 6, 20*time.Second)
	for id, as := range anns {
		if len(as) > 1 {
			raw, _ := json.Marshal(as)
			t.Errorf("bag %s annotated %d times: %s", id, len(as), raw)
		}
	}
	if len(anns) != 6 {
		t.Errorf("%d of 6 bags annotated", len(anns))
	}
	for _, b := range ds.Bags[:5] {
		if as := anns[b.ID]; len(as) > 0 && as[0].Annotator != "first" {
			t.Errorf("bag %s of the interrupted batch annotated by %s: the batch was dropped, not drained", b.ID, as[0].Annotator)
		}
	}
	cancel2()
	<-done2
}

package annotate

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// BenchmarkProcess measures the annotator's per-bag work outside Kafka
// (validate, decode, annotate, encode, trace) against Annotate alone, on
// MSCV2 bags with the centroid test model.
func BenchmarkProcess(b *testing.B) {
	ds, err := dataset.Load("../../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		b.Fatal(err)
	}
	m, err := streamtest.CentroidKind().Fit(context.Background(), ds, models.FitOptions{Params: models.Params{"iters": "1"}})
	if err != nil {
		b.Fatal(err)
	}
	blob, _ := models.Encode(m)
	kinds := models.NewRegistry(streamtest.CentroidKind())
	sm, err := decodeServed(kinds, blob, featurestore.VersionMeta{Version: "v1", Kind: streamtest.KindName, Classes: ds.Classes, Dim: ds.Dim})
	if err != nil {
		b.Fatal(err)
	}
	sm.mapper = nil // measure the model, not the cache
	msgs := make([]kafka.Message, len(ds.Bags))
	for i := range ds.Bags {
		raw, _ := json.Marshal(wire.NewBagMessage(&ds.Bags[i], "mscv2", ds.Dim, ds.Classes, false))
		msgs[i] = kafka.Message{Topic: "bags", Key: []byte(ds.Bags[i].ID), Value: raw}
	}
	a, err := NewAnnotator(AnnotatorConfig{Brokers: []string{"unused:0"}, Topics: wire.DefaultTopics(), Kinds: kinds, Store: nil2store{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("process", func(b *testing.B) {
		for i := range b.N {
			o := a.process(context.Background(), sm, msgs[i%len(msgs)])
			o.produce.End()
			o.span.End()
		}
	})
	b.Run("validate", func(b *testing.B) {
		for i := range b.N {
			if _, err := a.validator.DecodeBag(msgs[i%len(msgs)].Value); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The decoding alone is wire.BenchmarkDecodeDocument.
	b.Run("annotate", func(b *testing.B) {
		for i := range b.N {
			bag := ds.Bags[i%len(ds.Bags)]
			if _, err := m.Annotate(context.Background(), &bag, models.Transductive); err != nil {
				b.Fatal(err)
			}
		}
	})
}

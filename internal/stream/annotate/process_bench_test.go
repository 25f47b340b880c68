package annotate

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

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
	bins := make([]kafka.Message, len(ds.Bags)) // the same, in the binary encoding
	for i := range ds.Bags {
		bm := wire.NewBagMessage(&ds.Bags[i], "mscv2", ds.Dim, ds.Classes, false)
		raw, _ := json.Marshal(bm)
		msgs[i] = kafka.Message{Topic: "bags", Key: []byte(ds.Bags[i].ID), Value: raw}
		bins[i] = kafka.Message{Topic: "bags", Key: []byte(ds.Bags[i].ID), Value: bm.AppendProto(nil),
			Headers: []kafka.Header{{Key: wire.HeaderContentType, Value: []byte(wire.ContentTypeProtobuf)}}}
	}
	a, err := NewAnnotator(AnnotatorConfig{Brokers: []string{"unused:0"}, Topics: wire.DefaultTopics(), Kinds: kinds, Store: nil2store{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("process", func(b *testing.B) {
		defer reportCPU(b)()
		for i := range b.N {
			o := a.process(context.Background(), sm, msgs[i%len(msgs)])
			o.produce.End()
			o.span.End()
		}
	})
	// The same with bags and annotations in the binary encoding
	// (--wire-format protobuf).
	ab, err := NewAnnotator(AnnotatorConfig{Brokers: []string{"unused:0"}, Topics: wire.DefaultTopics(), Kinds: kinds, Store: nil2store{},
		Format: wire.FormatProtobuf})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("process-protobuf", func(b *testing.B) {
		defer reportCPU(b)()
		for i := range b.N {
			o := ab.process(context.Background(), sm, bins[i%len(bins)])
			if o.dead {
				b.Fatal(o.reason)
			}
			o.produce.End()
			o.span.End()
		}
	})
	// The bar as one number, load-proof: the CPU outside the model
	// per bag over the model's, with each bag processed and then
	// annotated alone in turn, so that both see the same load. The model
	// inside process is the same call as Annotate alone: process minus
	// annotate is what the pipeline adds.
	for _, c := range []struct {
		name string
		a    *Annotator
		in   []kafka.Message
	}{{"json", a, msgs}, {"protobuf", ab, bins}} {
		b.Run("outside-model-"+c.name, func(b *testing.B) {
			var proc, model time.Duration
			for i := range b.N {
				k := i % len(c.in)
				t0 := time.Now()
				o := c.a.process(context.Background(), sm, c.in[k])
				o.produce.End()
				o.span.End()
				t1 := time.Now()
				bag := ds.Bags[k]
				if _, err := m.Annotate(context.Background(), &bag, models.Transductive); err != nil {
					b.Fatal(err)
				}
				proc, model = proc+t1.Sub(t0), model+time.Since(t1)
			}
			b.ReportMetric(float64(proc-model)/float64(model), "outside/model")
		})
	}
	b.Run("validate", func(b *testing.B) {
		defer reportCPU(b)()
		for i := range b.N {
			if _, err := a.validator.DecodeBag(msgs[i%len(msgs)].Value); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The decoding alone is wire.BenchmarkDecodeDocument.
	b.Run("annotate", func(b *testing.B) {
		defer reportCPU(b)()
		for i := range b.N {
			bag := ds.Bags[i%len(ds.Bags)]
			if _, err := m.Annotate(context.Background(), &bag, models.Transductive); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// reportCPU, deferred at the start of a benchmark's loop, reports the CPU
// time of the process per iteration (user and system, every thread: the
// garbage collector's included). Unlike ns/op it does not stretch when
// other processes take the cores, so it is what compares runs on a loaded
// machine.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c0 := cpu()
	return func() { b.ReportMetric(float64(cpu()-c0)/float64(b.N), "cpu-ns/op") }
}

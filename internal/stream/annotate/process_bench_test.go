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
	"github.com/mimlstream/mimlstream/internal/models/orlr"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// BenchmarkProcess measures the annotator's per-bag work outside Kafka
// (validate, decode, annotate, encode, trace) against Annotate alone, on
// MSCV2 bags, with two models: the centroid test model (cheap, so the
// pipeline's own cost shows most) and ORed-LR as BenchmarkPipeline and the
// demo serve it (iters=10 msteps=10, seed 1), the model whose Annotate the
// target (CPU outside the model at most twice the model's) is stated
// against.
func BenchmarkProcess(b *testing.B) {
	ds, err := dataset.Load("../../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		b.Fatal(err)
	}
	centroid, err := streamtest.CentroidKind().Fit(context.Background(), ds, models.FitOptions{Params: models.Params{"iters": "1"}})
	if err != nil {
		b.Fatal(err)
	}
	orl, err := orlr.Kind().Fit(context.Background(), ds, models.FitOptions{Seed: 1, Params: models.Params{"iters": "10", "msteps": "10"}})
	if err != nil {
		b.Fatal(err)
	}
	kinds := models.NewRegistry(streamtest.CentroidKind(), orlr.Kind())
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
	// The same with bags and annotations in the binary encoding
	// (--wire-format protobuf).
	ab, err := NewAnnotator(AnnotatorConfig{Brokers: []string{"unused:0"}, Topics: wire.DefaultTopics(), Kinds: kinds, Store: nil2store{},
		Format: wire.FormatProtobuf})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("validate", func(b *testing.B) {
		defer reportCPU(b)()
		for i := range b.N {
			if _, err := a.validator.DecodeBag(msgs[i%len(msgs)].Value); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, mc := range []struct {
		name string
		m    models.Model
	}{{"centroid", centroid}, {"orlr", orl}} {
		blob, _ := models.Encode(mc.m)
		sm, err := decodeServed(kinds, blob, featurestore.VersionMeta{Version: "v1", Kind: mc.m.Meta().Kind, Classes: ds.Classes, Dim: ds.Dim})
		if err != nil {
			b.Fatal(err)
		}
		sm.mapper = nil // measure the model, not the cache
		m := sm.model
		b.Run("model="+mc.name, func(b *testing.B) {
			b.Run("process", func(b *testing.B) {
				defer reportCPU(b)()
				for i := range b.N {
					o := a.process(context.Background(), sm, msgs[i%len(msgs)])
					o.produce.End()
					o.span.End()
				}
			})
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
			// The target as one number: the CPU outside the model per
			// bag over the model's. Blocks of 64 bags are processed, then
			// the same 64 annotated alone, in turn, so that both halves see
			// the same load; each block is timed in process CPU (every
			// thread, the garbage collector's included: what the pipeline
			// allocates is its cost), which, unlike wall time, does not
			// stretch when other processes take the cores. The model inside
			// process is the same call as Annotate alone: process minus
			// annotate is what the pipeline adds.
			for _, c := range []struct {
				name string
				a    *Annotator
				in   []kafka.Message
			}{{"json", a, msgs}, {"protobuf", ab, bins}} {
				b.Run("outside-model-"+c.name, func(b *testing.B) {
					const block = 64
					var proc, model time.Duration
					for i := 0; i < b.N; i += block {
						n := min(block, b.N-i)
						c0 := processCPU(b)
						for j := range n {
							o := c.a.process(context.Background(), sm, c.in[(i+j)%len(c.in)])
							if o.dead {
								b.Fatal(o.reason)
							}
							o.produce.End()
							o.span.End()
						}
						c1 := processCPU(b)
						for j := range n {
							bag := ds.Bags[(i+j)%len(ds.Bags)]
							if _, err := m.Annotate(context.Background(), &bag, models.Transductive); err != nil {
								b.Fatal(err)
							}
						}
						c2 := processCPU(b)
						proc, model = proc+c1-c0, model+c2-c1
					}
					b.ReportMetric(float64(proc-model)/float64(model), "outside/model")
					b.ReportMetric(float64(proc-model)/float64(b.N), "outside-cpu-ns/bag")
					b.ReportMetric(float64(model)/float64(b.N), "model-cpu-ns/bag")
				})
			}
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
		})
	}
}

// reportCPU, deferred at the start of a benchmark's loop, reports the CPU
// time of the process per iteration (user and system, every thread: the
// garbage collector's included). Unlike ns/op it does not stretch when
// other processes take the cores, so it is what compares runs on a loaded
// machine.
func reportCPU(b *testing.B) func() {
	c0 := processCPU(b)
	return func() { b.ReportMetric(float64(processCPU(b)-c0)/float64(b.N), "cpu-ns/op") }
}

// processCPU is the CPU time of the process so far: user and system, every
// thread.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

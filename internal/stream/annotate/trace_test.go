package annotate

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/telemetrytest"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceChainIngestToAnnotation checks one trace per bag: ingest ->
// annotate (across the Kafka headers) -> decode, infer, produce, and that
// the annotation message carries the produce span's context onward.
func TestTraceChainIngestToAnnotation(t *testing.T) {
	h := newHarness(t)
	ctx, cancel, ds, _ := h.withModel(12)
	prov, rec := telemetrytest.NewProviders()
	obs := service.Observability{Tracer: prov.Tracer, Meter: prov.Meter, Propagator: prov.Propagator, Logger: streamtest.Logger(t)}
	_, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) { c.Obs = obs })
	h.publish(ctx, ingest.PublisherConfig{LabelFraction: 0.5, Obs: obs}, ds, ds.Bags)
	h.collect(ctx, len(ds.Bags), 20*time.Second)
	// The annotator's /metrics serves its instruments through the
	// Prometheus exporter. A batch's metrics are recorded once its outputs
	// are acknowledged, so the last batch's may follow its annotations by
	// a moment: wait for them.
	want := []string{"mimlstream_annotator_bags_total", "mimlstream_annotator_latency_seconds_bucket",
		"mimlstream_annotator_model_info", `mimlstream_annotator_consumer_lag{otel_scope_name="github.com/mimlstream/mimlstream/internal/stream",otel_scope_schema_url="",otel_scope_version="",partition="0",topic="bags"}`,
		`mimlstream_annotator_dead_letters_total{otel_scope_name="github.com/mimlstream/mimlstream/internal/stream",otel_scope_schema_url="",otel_scope_version="",reason="produce_refused"} 0`,
		"mimlstream_annotator_model_swaps_total"}
	rr := httptest.NewRecorder()
	missing := func() []string {
		rr = httptest.NewRecorder()
		prov.MetricsHandler.ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
		var out []string
		for _, name := range want {
			if !strings.Contains(rr.Body.String(), name) {
				out = append(out, name)
			}
		}
		return out
	}
	streamtest.WaitExplained(t, 5*time.Second, 20*time.Millisecond, func() bool { return len(missing()) == 0 },
		func() string { return fmt.Sprintf("/metrics lacks %q", missing()) })
	// Bounded labels: no version label on the swap counter, and the
	// precomputed rate is gone (rate() over the counters replaces it).
	for _, bad := range []string{"mimlstream_annotator_bags_per_second", `mimlstream_annotator_model_swaps_total{otel_scope_name="github.com/mimlstream/mimlstream/internal/stream",otel_scope_schema_url="",otel_scope_version="",version=`} {
		if strings.Contains(rr.Body.String(), bad) {
			t.Errorf("/metrics still has %s", bad)
		}
	}
	// Every output carries the schema version and a trace context.
	var headers []kafka.Header
	tctx, tcancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := kafkaio.Tail(tctx, h.brokers, kafkasec.Conn{}, h.topics.Annotations, func(m kafka.Message) error {
		headers = m.Headers
		return kafkaio.ErrStop
	})
	tcancel()
	if err != nil {
		t.Fatal(err)
	}
	hv := map[string]string{}
	for _, x := range headers {
		hv[x.Key] = string(x.Value)
	}
	if hv[wire.HeaderSchemaVersion] != "1" || !strings.HasPrefix(hv["traceparent"], "00-") {
		t.Errorf("output headers %v lack the schema version or the trace context", hv)
	}
	stopAnnotator(t, cancel, done)

	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	ingestByTrace := map[trace.TraceID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		if s.Name() == "send bags" {
			if _, dup := ingestByTrace[s.SpanContext().TraceID()]; dup {
				t.Errorf("two ingest spans in one trace")
			}
			ingestByTrace[s.SpanContext().TraceID()] = s
		}
	}
	if len(ingestByTrace) != len(ds.Bags) {
		t.Fatalf("%d ingest traces, want one per bag (%d)", len(ingestByTrace), len(ds.Bags))
	}
	children := map[trace.SpanID]map[string]int{}
	annotates := 0
	for _, s := range spans {
		p := s.Parent().SpanID()
		if children[p] == nil {
			children[p] = map[string]int{}
		}
		children[p][s.Name()]++
		if s.Name() != "process bags" {
			continue
		}
		annotates++
		attrs := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value.String()
		}
		for k, want := range map[attribute.Key]string{"messaging.system": "kafka", "messaging.operation.type": "process", "messaging.consumer.group.name": "annotators",
			"messaging.destination.name": "bags"} {
			if attrs[k] != want {
				t.Errorf("process span attribute %s = %q, want %q", k, attrs[k], want)
			}
		}
		if attrs["messaging.destination.partition.id"] == "" || attrs["messaging.kafka.offset"] == "" {
			t.Errorf("process span lacks the partition or offset: %v", attrs)
		}
		ing, ok := ingestByTrace[s.SpanContext().TraceID()]
		if !ok {
			t.Errorf("annotate span in a trace without an ingest span: the chain is broken")
			continue
		}
		if s.Parent().SpanID() != ing.SpanContext().SpanID() || !s.Parent().IsRemote() {
			t.Errorf("annotate span's parent is %v, want the remote ingest span %v", s.Parent().SpanID(), ing.SpanContext().SpanID())
		}
	}
	if annotates != len(ds.Bags) {
		t.Errorf("%d annotate spans, want %d", annotates, len(ds.Bags))
	}
	for _, s := range spans {
		if s.Name() != "process bags" {
			continue
		}
		c := children[s.SpanContext().SpanID()]
		if c["decode"] != 1 || c["infer"] != 1 || c["send annotations"] != 1 {
			t.Errorf("process span children %v, want one decode, infer and send annotations", c)
		}
	}
}

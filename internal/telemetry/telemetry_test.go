package telemetry_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mimlstream/mimlstream/internal/telemetry"
	"github.com/mimlstream/mimlstream/internal/testsupport/telemetrytest"
)

func TestInjectExtractRoundTrip(t *testing.T) {
	p, _ := telemetrytest.NewProviders()
	defer p.Shutdown(context.Background())
	tests := []struct {
		name    string
		headers []kafka.Header
	}{
		{"no headers", nil},
		{"unrelated headers kept", []kafka.Header{{Key: "schema-version", Value: []byte("1")}}},
		{"stale trace context replaced", []kafka.Header{
			{Key: "Traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
			{Key: "schema-version", Value: []byte("1")},
			{Key: "traceparent", Value: []byte("00-11111111111111111111111111111111-2222222222222222-01")},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			member, err := baggage.NewMember("tenant", "lab-7")
			if err != nil {
				t.Fatal(err)
			}
			bag, err := baggage.New(member)
			if err != nil {
				t.Fatal(err)
			}
			ctx := baggage.ContextWithBaggage(context.Background(), bag)
			ctx, span := p.Tracer.Tracer("test").Start(ctx, "produce")
			defer span.End()
			sent := span.SpanContext()

			orig := append([]kafka.Header(nil), tc.headers...)
			h := tc.headers
			telemetry.Inject(ctx, p.Propagator, &h)
			if n := countKey(h, "traceparent"); n != 1 {
				t.Fatalf("%d traceparent headers after Inject, want 1: %v", n, h)
			}
			for _, o := range orig {
				if !strings.EqualFold(o.Key, "traceparent") && countKey(h, o.Key) != 1 {
					t.Errorf("header %q lost or duplicated: %v", o.Key, h)
				}
			}
			for i := range tc.headers {
				if !bytes.Equal(tc.headers[i].Value, orig[i].Value) || tc.headers[i].Key != orig[i].Key {
					t.Errorf("Inject modified the caller's original headers in place")
				}
			}

			got := telemetry.Extract(context.Background(), p.Propagator, h)
			sc := trace.SpanContextFromContext(got)
			if sc.TraceID() != sent.TraceID() || sc.SpanID() != sent.SpanID() || !sc.IsRemote() || !sc.IsSampled() {
				t.Errorf("extracted %v/%v remote=%v, sent %v/%v", sc.TraceID(), sc.SpanID(), sc.IsRemote(), sent.TraceID(), sent.SpanID())
			}
			if v := baggage.FromContext(got).Member("tenant").Value(); v != "lab-7" {
				t.Errorf("baggage tenant = %q, want lab-7", v)
			}
		})
	}
}

func countKey(h []kafka.Header, key string) int {
	n := 0
	for _, x := range h {
		if strings.EqualFold(x.Key, key) {
			n++
		}
	}
	return n
}

func TestExtractWithoutContext(t *testing.T) {
	p, _ := telemetrytest.NewProviders()
	got := telemetry.Extract(context.Background(), p.Propagator, []kafka.Header{{Key: "traceparent", Value: []byte("garbage")}})
	if trace.SpanContextFromContext(got).IsValid() {
		t.Error("extracted a valid span context from a malformed traceparent")
	}
}

// TestTracePropagatesAcrossServices checks the whole path: a child span
// started from an extracted context belongs to the sender's trace and has
// the sender's span as parent.
func TestTracePropagatesAcrossServices(t *testing.T) {
	producer, _ := telemetrytest.NewProviders()
	consumer, rec := telemetrytest.NewProviders()
	ctx, span := producer.Tracer.Tracer("ingest").Start(context.Background(), "publish")
	var h []kafka.Header
	telemetry.Inject(ctx, producer.Propagator, &h)
	span.End()

	_, child := consumer.Tracer.Tracer("annotator").Start(telemetry.Extract(context.Background(), consumer.Propagator, h), "annotate")
	child.End()
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("recorded %d spans, want 1", len(spans))
	}
	if got := spans[0]; got.Name() != "annotate" || got.SpanContext().TraceID() != span.SpanContext().TraceID() ||
		got.Parent().SpanID() != span.SpanContext().SpanID() {
		t.Errorf("span %s trace %v parent %v; want trace %v parent %v", got.Name(),
			got.SpanContext().TraceID(), got.Parent().SpanID(), span.SpanContext().TraceID(), span.SpanContext().SpanID())
	}
}

func TestMetricsHandlerServesCounter(t *testing.T) {
	ctx := context.Background()
	p, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "annotator"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)
	c, err := p.Meter.Meter("test").Int64Counter("bags_annotated", metric.WithDescription("bags annotated"))
	if err != nil {
		t.Fatal(err)
	}
	c.Add(ctx, 2, metric.WithAttributes(attribute.String("mode", "inductive")))
	c.Add(ctx, 1, metric.WithAttributes(attribute.String("mode", "inductive")))
	c.Add(ctx, 5, metric.WithAttributes(attribute.String("mode", "transductive")))

	fams := scrape(t, p.MetricsHandler)
	fam, ok := fams["bags_annotated_total"]
	if !ok {
		t.Fatalf("no bags_annotated_total in %v", keys(fams))
	}
	want := map[string]float64{"inductive": 3, "transductive": 5}
	if len(fam.GetMetric()) != len(want) {
		t.Fatalf("%d series, want %d", len(fam.GetMetric()), len(want))
	}
	for _, m := range fam.GetMetric() {
		mode := label(m, "mode")
		if got := m.GetCounter().GetValue(); got != want[mode] {
			t.Errorf("bags_annotated_total{mode=%q} = %v, want %v", mode, got, want[mode])
		}
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("runtime metrics missing")
	}
	if ti, ok := fams["target_info"]; !ok || label(ti.GetMetric()[0], "service_name") != "annotator" {
		t.Error("target_info with service_name=annotator missing")
	}
}

func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rw.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", rw.Code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rw.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestProvidersAreIndependent checks that two providers in one process do
// not share metric state (no global registry).
func TestProvidersAreIndependent(t *testing.T) {
	a, _ := telemetrytest.NewProviders()
	b, _ := telemetrytest.NewProviders()
	c, err := a.Meter.Meter("t").Int64Counter("only_in_a")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(context.Background(), 1)
	if _, ok := scrape(t, a.MetricsHandler)["only_in_a_total"]; !ok {
		t.Error("counter missing from its own provider")
	}
	if _, ok := scrape(t, b.MetricsHandler)["only_in_a_total"]; ok {
		t.Error("counter leaked into another provider")
	}
}

func TestSetupExporters(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	tests := []struct {
		name    string
		cfg     telemetry.Config
		wantErr bool
	}{
		{name: "none", cfg: telemetry.Config{ServiceName: "s", Exporter: "none"}},
		{name: "default is none", cfg: telemetry.Config{ServiceName: "s"}},
		{name: "stdout", cfg: telemetry.Config{ServiceName: "s", Exporter: "stdout"}},
		// The OTLP exporter connects lazily: a collector that is down must
		// not fail start-up, and shutdown must end within its context.
		{name: "otlp, collector down", cfg: telemetry.Config{ServiceName: "s", Exporter: "otlp", OTLPEndpoint: closed, Insecure: true}},
		{name: "unknown exporter", cfg: telemetry.Config{ServiceName: "s", Exporter: "zipkin"}, wantErr: true},
		{name: "no service name", cfg: telemetry.Config{Exporter: "none"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			tc.cfg.Stdout = &out
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p, err := telemetry.Setup(ctx, tc.cfg)
			if tc.wantErr {
				if err == nil {
					t.Fatal("Setup succeeded, want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, span := p.Tracer.Tracer("t").Start(ctx, "unit-of-work")
			if !span.SpanContext().IsValid() {
				t.Error("span has no valid context, so nothing would propagate")
			}
			span.End()
			sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer scancel()
			err = p.Shutdown(sctx)
			if tc.cfg.Exporter != telemetry.ExporterOTLP && err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			if sctx.Err() != nil && tc.cfg.Exporter != telemetry.ExporterOTLP {
				t.Error("Shutdown used its whole deadline")
			}
			wrote := strings.Contains(out.String(), "unit-of-work") &&
				strings.Contains(out.String(), span.SpanContext().TraceID().String())
			if wrote != (tc.cfg.Exporter == telemetry.ExporterStdout) {
				t.Errorf("stdout output has the span: %v, want %v", wrote, tc.cfg.Exporter == telemetry.ExporterStdout)
			}
		})
	}
}

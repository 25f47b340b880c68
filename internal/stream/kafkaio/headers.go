package stream

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/metric"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	nooptrace "go.opentelemetry.io/otel/trace/noop"

	"github.com/mimlstream/mimlstream/internal/telemetry"
	"github.com/mimlstream/mimlstream/schemas"
)

// Observability is what the services need to trace and measure themselves
// (telemetry.Providers supplies each field). Zero fields mean no-op.
type Observability struct {
	Tracer     trace.TracerProvider
	Meter      metric.MeterProvider
	Propagator propagation.TextMapPropagator
	Logger     *slog.Logger
}

func (o Observability) withDefaults() Observability {
	if o.Tracer == nil {
		o.Tracer = nooptrace.NewTracerProvider()
	}
	if o.Meter == nil {
		o.Meter = noopmetric.NewMeterProvider()
	}
	if o.Propagator == nil {
		o.Propagator = telemetry.Propagator()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

const instrumentation = "github.com/mimlstream/mimlstream/internal/stream"

// messageHeaders returns the headers of an outgoing message: the trace
// context of ctx and the schema version.
func messageHeaders(ctx context.Context, p propagation.TextMapPropagator) []kafka.Header {
	h := []kafka.Header{
		{Key: HeaderSchemaVersion, Value: []byte(strconv.Itoa(schemas.Version))},
		{Key: HeaderContentType, Value: []byte("application/json")},
	}
	telemetry.Inject(ctx, p, &h)
	return h
}

// Package telemetrytest gives tests telemetry providers that record
// finished spans in memory. Only tests import it.
package telemetrytest

import (
	"fmt"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/mimlstream/mimlstream/internal/telemetry"
)

// NewProviders returns providers that record finished spans in memory (read
// them from the SpanRecorder) and serve metrics from a private registry.
func NewProviders() (*telemetry.Providers, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	p, err := telemetry.NewProviders(tp, resource.NewSchemaless(semconv.ServiceName("test")), false)
	if err != nil {
		// Only registration conflicts fail here, and a fresh registry
		// has none.
		panic(fmt.Sprintf("telemetrytest: %v", err))
	}
	return p, sr
}

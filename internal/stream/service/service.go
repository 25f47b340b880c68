// Package service is what the pipeline's three services (ingest, annotate,
// retrain) share: the process environment (Env), the observability handles
// (Observability), the Kafka and telemetry settings with their flags, the
// start-up every service does (Start), and one lifecycle (Run): the
// service's work and its HTTP listeners run as one group, so any of them
// failing stops the service, and SIGTERM drains the work before the
// listeners close. The Redis settings are in the subpackage redisflag,
// which ingest does not need. Exit codes follow cli.ExitCode.
package service

import (
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/metric"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	nooptrace "go.opentelemetry.io/otel/trace/noop"

	"github.com/mimlstream/mimlstream/internal/telemetry"
)

// Instrumentation is the instrumentation scope of the pipeline's tracers and
// meters. It names the package the services lived in before they were
// split; /metrics shows it as otel_scope_name, so it stays as it was.
const Instrumentation = "github.com/mimlstream/mimlstream/internal/stream"

// Env is what a service takes from its process; tests substitute theirs.
type Env struct {
	// Stdin feeds `ingest --jsonl -`; nil means os.Stdin.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Logger returns a text logger on Stderr at level.
func (e Env) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: level}))
}

// Observability is what the services need to trace and measure themselves
// (telemetry.Providers supplies each field). Zero fields mean no-op.
type Observability struct {
	Tracer     trace.TracerProvider
	Meter      metric.MeterProvider
	Propagator propagation.TextMapPropagator
	Logger     *slog.Logger
}

// WithDefaults returns o with its zero fields set to no-op providers, the
// W3C propagator and a discarding logger.
func (o Observability) WithDefaults() Observability {
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

// Package telemetry builds the OpenTelemetry providers of a service: traces
// to stdout or to an OTLP/gRPC collector, metrics served in the Prometheus
// format from a private registry, and W3C trace-context + baggage
// propagation, including across Kafka message headers. Nothing is
// installed globally: callers pass the providers where they are needed.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Trace exporters accepted in Config.Exporter.
const (
	ExporterNone   = "none"
	ExporterStdout = "stdout"
	ExporterOTLP   = "otlp"
)

// Config selects where telemetry goes.
type Config struct {
	ServiceName string
	// Exporter is "none" (or empty), "stdout" or "otlp". With "none",
	// spans are still created and propagated, so trace ids flow through
	// the pipeline, but none is exported.
	Exporter string
	// OTLPEndpoint is the collector's host:port for "otlp", or a URL
	// (http:// implies Insecure); empty means the
	// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variables or localhost:4317.
	OTLPEndpoint string
	// Insecure disables TLS towards the collector.
	Insecure bool
	// Stdout receives the "stdout" exporter's spans; nil means os.Stdout.
	Stdout io.Writer
}

// Providers are a service's telemetry handles.
type Providers struct {
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
	// MetricsHandler serves the meter's instruments, plus Go runtime and
	// process metrics, in the Prometheus exposition format (mount it on
	// /metrics).
	MetricsHandler http.Handler
	Propagator     propagation.TextMapPropagator
	// Shutdown flushes pending spans and stops the providers.
	Shutdown func(context.Context) error
}

// Propagator returns the W3C trace-context + baggage propagator.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// Setup builds the providers for cfg. The OTLP exporter connects lazily, so
// a collector that is down does not fail start-up (spans are dropped and
// the SDK logs the export errors).
func Setup(ctx context.Context, cfg Config) (*Providers, error) {
	if cfg.ServiceName == "" {
		return nil, errors.New("telemetry: empty service name")
	}
	res, err := resource.Merge(resource.Default(),
		resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(cfg.ServiceName)))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}

	topts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	switch cfg.Exporter {
	case "", ExporterNone:
	case ExporterStdout:
		w := cfg.Stdout
		if w == nil {
			w = os.Stdout
		}
		exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
		if err != nil {
			return nil, fmt.Errorf("telemetry stdout exporter: %w", err)
		}
		// Synchronous export keeps stdout output ordered with the logs;
		// stdout is for debugging, not for load.
		topts = append(topts, sdktrace.WithSyncer(exp))
	case ExporterOTLP:
		var opts []otlptracegrpc.Option
		switch {
		case strings.Contains(cfg.OTLPEndpoint, "://"):
			opts = append(opts, otlptracegrpc.WithEndpointURL(cfg.OTLPEndpoint))
		case cfg.OTLPEndpoint != "":
			opts = append(opts, otlptracegrpc.WithEndpoint(cfg.OTLPEndpoint))
		}
		if cfg.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("telemetry otlp exporter: %w", err)
		}
		topts = append(topts, sdktrace.WithBatcher(exp))
	default:
		return nil, fmt.Errorf("telemetry: unknown exporter %q (want %s, %s or %s)", cfg.Exporter, ExporterNone, ExporterStdout, ExporterOTLP)
	}
	tp := sdktrace.NewTracerProvider(topts...)
	p, err := NewProviders(tp, res, true)
	if err != nil {
		return nil, errors.Join(err, tp.Shutdown(ctx))
	}
	return p, nil
}

// NewProviders completes a tracer provider into a service's providers: a
// meter read by a Prometheus exporter on a private registry (with the Go
// runtime and process collectors when runtimeMetrics), the handler serving
// that registry, the W3C propagator, and a Shutdown of both providers. A
// private registry keeps two providers in one process (tests, or a command
// embedding two services) from colliding. Setup uses it; so do the test
// providers of internal/testsupport/telemetrytest, which record spans.
func NewProviders(tp *sdktrace.TracerProvider, res *resource.Resource, runtimeMetrics bool) (*Providers, error) {
	reg := prometheus.NewRegistry()
	if runtimeMetrics {
		if err := errors.Join(
			reg.Register(collectors.NewGoCollector()),
			reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		); err != nil {
			return nil, fmt.Errorf("telemetry runtime metrics: %w", err)
		}
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("telemetry prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
	return &Providers{
		Tracer:         tp,
		Meter:          mp,
		MetricsHandler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
		Propagator:     Propagator(),
		Shutdown: func(ctx context.Context) error {
			return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
		},
	}, nil
}

package telemetry_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/mimlstream/mimlstream/internal/telemetry"
)

// collector is an in-process OTLP/gRPC trace receiver.
type collector struct {
	coltrace.UnimplementedTraceServiceServer
	mu   sync.Mutex
	reqs []*coltrace.ExportTraceServiceRequest
}

func (c *collector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, req)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// TestOTLPExport sends a span through Setup's OTLP exporter to a real gRPC
// receiver and checks what arrives: the span, its trace id, and the
// service name as a resource attribute.
func TestOTLPExport(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, col)
	go srv.Serve(l)
	defer srv.Stop()

	for _, endpoint := range []string{l.Addr().String(), "http://" + l.Addr().String()} {
		t.Run(endpoint, func(t *testing.T) {
			col.mu.Lock()
			col.reqs = nil
			col.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "annotator", Exporter: telemetry.ExporterOTLP, OTLPEndpoint: endpoint,
				Insecure: endpoint == l.Addr().String()})
			if err != nil {
				t.Fatal(err)
			}
			_, span := p.Tracer.Tracer("t").Start(ctx, "annotate-batch")
			span.End()
			if err := p.Shutdown(ctx); err != nil { // flushes the batch
				t.Fatal(err)
			}
			col.mu.Lock()
			defer col.mu.Unlock()
			var found bool
			for _, req := range col.reqs {
				for _, rs := range req.GetResourceSpans() {
					var service string
					for _, kv := range rs.GetResource().GetAttributes() {
						if kv.GetKey() == "service.name" {
							service = kv.GetValue().GetStringValue()
						}
					}
					for _, ss := range rs.GetScopeSpans() {
						for _, s := range ss.GetSpans() {
							tid := span.SpanContext().TraceID()
							if s.GetName() == "annotate-batch" && string(s.GetTraceId()) == string(tid[:]) && service == "annotator" {
								found = true
							}
						}
					}
				}
			}
			if !found {
				t.Errorf("span not received with its trace id and service.name; got %d requests", len(col.reqs))
			}
		})
	}
}

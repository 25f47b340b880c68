package kafkaio

import (
	"context"
	"strconv"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/telemetry"
	"github.com/mimlstream/mimlstream/schemas"
)

// Headers returns the headers of an outgoing JSON message: the trace
// context of ctx, the schema version and the content type.
func Headers(ctx context.Context, p propagation.TextMapPropagator) []kafka.Header {
	return HeadersAs(ctx, p, wire.FormatJSON)
}

// HeadersAs returns the headers of an outgoing message in format f: its
// content type tells the reader how to decode it.
func HeadersAs(ctx context.Context, p propagation.TextMapPropagator, f wire.Format) []kafka.Header {
	// Both values in one allocation: this runs for every message.
	ct := f.ContentType()
	v := strconv.AppendInt(make([]byte, 0, 4+len(ct)), schemas.Version, 10)
	n := len(v)
	v = append(v, ct...)
	h := []kafka.Header{
		{Key: wire.HeaderSchemaVersion, Value: v[:n:n]},
		{Key: wire.HeaderContentType, Value: v[n:]},
	}
	telemetry.Inject(ctx, p, &h)
	return h
}

// ContentType returns the value of the content-type header of a message,
// "" when it has none.
func ContentType(h []kafka.Header) string {
	for _, x := range h {
		if x.Key == wire.HeaderContentType {
			return string(x.Value)
		}
	}
	return ""
}

// SchemaVersion returns the value of the schema-version header of a
// message, "" when it has none.
func SchemaVersion(h []kafka.Header) string {
	for _, x := range h {
		if x.Key == wire.HeaderSchemaVersion {
			return string(x.Value)
		}
	}
	return ""
}

// WithContentType returns a copy of h whose content type is f's: an output
// replaced by a dead letter (JSON) keeps its trace context.
func WithContentType(h []kafka.Header, f wire.Format) []kafka.Header {
	out := make([]kafka.Header, 0, len(h))
	for _, x := range h {
		if x.Key != wire.HeaderContentType {
			out = append(out, x)
		}
	}
	return append(out, kafka.Header{Key: wire.HeaderContentType, Value: []byte(f.ContentType())})
}

// WithOriginal returns h with the original-content-type header of a dead
// letter whose original has content type ct, when that is not JSON (the
// original is then binary; without the header, a reader takes it for
// JSON).
func WithOriginal(h []kafka.Header, ct string) []kafka.Header {
	if wire.FormatOf(ct) == wire.FormatJSON {
		return h
	}
	return append(h, kafka.Header{Key: wire.HeaderOriginalContentType, Value: []byte(ct)})
}

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

// Headers returns the headers of an outgoing message: the trace context of
// ctx, the schema version and the content type.
func Headers(ctx context.Context, p propagation.TextMapPropagator) []kafka.Header {
	h := []kafka.Header{
		{Key: wire.HeaderSchemaVersion, Value: []byte(strconv.Itoa(schemas.Version))},
		{Key: wire.HeaderContentType, Value: []byte("application/json")},
	}
	telemetry.Inject(ctx, p, &h)
	return h
}

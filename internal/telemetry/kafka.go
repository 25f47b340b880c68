package telemetry

import (
	"context"
	"strings"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
)

// HeaderCarrier lets a propagator read and write Kafka message headers.
// Keys match case-insensitively, and Set replaces every existing header of
// the key, so a message forwarded from one topic to the next carries one
// up-to-date traceparent rather than a stale one followed by a new one.
type HeaderCarrier []kafka.Header

var _ propagation.TextMapCarrier = (*HeaderCarrier)(nil)

// Get returns the value of the first header named key, or "".
func (c *HeaderCarrier) Get(key string) string {
	for _, h := range *c {
		if strings.EqualFold(h.Key, key) {
			return string(h.Value)
		}
	}
	return ""
}

// Set replaces all headers named key by one with the given value. It
// builds a new slice, so headers shared with another message (a forwarded
// input) are never modified in place.
func (c *HeaderCarrier) Set(key, value string) {
	hs := make([]kafka.Header, 0, len(*c)+1)
	for _, h := range *c {
		if !strings.EqualFold(h.Key, key) {
			hs = append(hs, h)
		}
	}
	*c = append(hs, kafka.Header{Key: key, Value: []byte(value)})
}

// Keys lists the header keys.
func (c *HeaderCarrier) Keys() []string {
	keys := make([]string, len(*c))
	for i, h := range *c {
		keys[i] = h.Key
	}
	return keys
}

// Inject writes the trace context and baggage of ctx into *h.
func Inject(ctx context.Context, p propagation.TextMapPropagator, h *[]kafka.Header) {
	p.Inject(ctx, (*HeaderCarrier)(h))
}

// Extract returns ctx extended with the trace context and baggage found in
// h; h is not modified.
func Extract(ctx context.Context, p propagation.TextMapPropagator, h []kafka.Header) context.Context {
	return p.Extract(ctx, (*HeaderCarrier)(&h))
}

// Package kafkaio is the pipeline's Kafka plumbing, shared by the services:
// the producer settings and the acknowledged write, explicit topic
// creation, the message headers (schema version and W3C trace context),
// the observer's tail of a topic, and kafka-go's logging routed to slog.
// It holds no service logic.
package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
)

// NewWriter returns a producer for the pipeline's topics. Every write waits
// for all in-sync replicas (kafka-go defaults to no acknowledgement at all,
// which would make the commit-after-ack discipline meaningless), messages
// are partitioned by key (the bag id) so one bag's records stay ordered, and
// the topic is set per message so one writer serves every output.
//
// sec secures the connections (TLS, SASL); its zero value is plaintext.
func NewWriter(brokers []string, sec kafkasec.Conn) *kafka.Writer {
	return &kafka.Writer{
		Addr:         kafka.TCP(brokers...),
		Transport:    sec.Transport(),
		RequiredAcks: kafka.RequireAll,
		Balancer:     &kafka.Hash{},
		// WriteMessages is called with whole batches; a short timeout stops
		// a partial batch from waiting the 1 s default.
		BatchTimeout: 2 * time.Millisecond,
		BatchSize:    1000,
		BatchBytes:   16 << 20,
		MaxAttempts:  5,
		// Topics are created explicitly (EnsureTopics).
		AllowAutoTopicCreation: false,
	}
}

// WriteAcked writes msgs and retries transient failures until they are all
// acknowledged or ctx ends. kafka-go reports per-message failures in a
// WriteErrors; only the failed messages are retried, so an acknowledged
// message is never written twice by this loop.
func WriteAcked(ctx context.Context, w *kafka.Writer, msgs []kafka.Message) error {
	backoff := 50 * time.Millisecond
	for attempt := 0; len(msgs) > 0; attempt++ {
		err := w.WriteMessages(ctx, msgs...)
		if err == nil {
			return nil
		}
		var we kafka.WriteErrors
		if errors.As(err, &we) && len(we) == len(msgs) {
			var failed []kafka.Message
			for i, e := range we {
				if e != nil {
					failed = append(failed, msgs[i])
				}
			}
			msgs = failed
		}
		if ctx.Err() != nil {
			return fmt.Errorf("write %d messages: %w (last error: %v)", len(msgs), ctx.Err(), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("write %d messages: %w (last error: %v)", len(msgs), ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	return nil
}

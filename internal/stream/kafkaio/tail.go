package kafkaio

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
)

// ErrStop, returned by a Tail callback, ends the tail without error.
var ErrStop = errors.New("stop tailing")

// Tail reads topic from its beginning as member of consumer group (which
// should be unique to the caller, e.g. a demo's progress view or a test)
// and calls fn for each message until fn returns an error or ctx ends.
// Offsets are not committed: a tail is an observer, not a processor.
func Tail(ctx context.Context, brokers []string, sec kafkasec.Conn, topic, group string, fn func(kafka.Message) error) error {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:          brokers,
		Dialer:           sec.Dialer(),
		GroupID:          group,
		Topic:            topic,
		MinBytes:         1,
		MaxBytes:         64 << 20,
		MaxWait:          100 * time.Millisecond,
		StartOffset:      kafka.FirstOffset,
		JoinGroupBackoff: 200 * time.Millisecond,
		ReadBackoffMin:   10 * time.Millisecond,
		ReadBackoffMax:   100 * time.Millisecond,
	})
	defer r.Close()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// The reader reports what it recovers from by itself: the
			// group coordinator's retriable answers (Not Coordinator For
			// Group while a new cluster creates __consumer_offsets, a
			// rebalance) and a broker that is away (restarted, or a leader
			// being elected). Keep reading; anything else ends the tail.
			if !Transient(err) {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		if err := fn(m); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
}

// Transient reports whether err is one a kafka-go client recovers from by
// retrying: a retriable Kafka error code, or a broker that refused, reset
// or dropped the connection or did not answer in time. Authentication and
// TLS failures are not transient.
func Transient(err error) bool {
	if kerr, ok := errors.AsType[kafka.Error](err); ok {
		return kerr.Temporary()
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var nerr net.Error
	return errors.As(err, &nerr) && nerr.Timeout()
}

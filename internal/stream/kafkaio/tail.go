package kafkaio

import (
	"context"
	"errors"
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
			return err
		}
		if err := fn(m); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
}

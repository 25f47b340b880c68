package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
)

// ErrStop, returned by a Tail callback, ends the tail without error.
var ErrStop = errors.New("stop tailing")

// Tail reads every partition of topic from its beginning and calls fn for
// each message, one at a time, until fn returns an error or ctx ends. It
// joins no consumer group and commits nothing: a tail is an observer, not
// a processor, and a group would tie it to the coordinator. After a broker
// restart a group's coordinator must load the group and expire the old
// members before it assigns partitions again; a tail that reads its
// partitions directly only waits for their leaders. Records appear in
// offset order within a partition; across partitions, as they arrive.
// Partitions added to the topic after Tail starts are not read.
func Tail(ctx context.Context, brokers []string, sec kafkasec.Conn, topic string, fn func(kafka.Message) error) error {
	parts, err := partitionsOf(ctx, brokers, sec, topic)
	if err != nil || len(parts) == 0 {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("tail %s: %w", topic, errors.Join(err, errors.New("no partitions")))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan kafka.Message)
	errc := make(chan error, len(parts))
	for _, p := range parts {
		go func() { errc <- tailPartition(ctx, brokers, sec, topic, p, msgs) }()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case m := <-msgs:
			if err := fn(m); err != nil {
				if errors.Is(err, ErrStop) {
					return nil
				}
				return err
			}
		}
	}
}

// partitionsOf returns topic's partition ids, retrying while the cluster
// answers with a transient error (a broker starting, a leader election).
func partitionsOf(ctx context.Context, brokers []string, sec kafkasec.Conn, topic string) ([]int, error) {
	d := sec.Dialer()
	for {
		var last error
		for _, b := range brokers {
			conn, err := d.DialContext(ctx, "tcp", b)
			if err != nil {
				last = err
				continue
			}
			parts, err := conn.ReadPartitions(topic)
			conn.Close()
			if err != nil {
				last = err
				continue
			}
			ids := make([]int, len(parts))
			for i, p := range parts {
				ids[i] = p.ID
			}
			return ids, nil
		}
		if !Transient(last) {
			return nil, last
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// tailPartition sends partition's messages to msgs from the first offset.
// The partition reader reconnects by itself (to a restarted broker, to a
// new leader); what it reports of that is skipped.
func tailPartition(ctx context.Context, brokers []string, sec kafkasec.Conn, topic string, partition int, msgs chan<- kafka.Message) error {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:        brokers,
		Dialer:         sec.Dialer(),
		Topic:          topic,
		Partition:      partition,
		MinBytes:       1,
		MaxBytes:       64 << 20,
		MaxWait:        100 * time.Millisecond,
		ReadBackoffMin: 10 * time.Millisecond,
		ReadBackoffMax: 100 * time.Millisecond,
	})
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		return err
	}
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !Transient(err) {
				return fmt.Errorf("tail %s/%d: %w", topic, partition, err)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		select {
		case msgs <- m:
		case <-ctx.Done():
			return nil
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

// ConsumerRefused reports whether err is the broker refusing a consumer for good:
// a setting outside what the broker allows (a session timeout outside
// group.min/max.session.timeout.ms), a protocol version it no longer
// speaks, or an authorization it denies. kafka-go's group reader retries
// these forever, logging each attempt, so a consumer must stop on them
// itself rather than look alive while it consumes nothing.
func ConsumerRefused(err error) bool {
	kerr, ok := errors.AsType[kafka.Error](err)
	if !ok {
		return false
	}
	switch kerr {
	case kafka.InvalidSessionTimeout, kafka.InvalidGroupId, kafka.InconsistentGroupProtocol, kafka.UnsupportedVersion,
		kafka.GroupAuthorizationFailed, kafka.TopicAuthorizationFailed, kafka.ClusterAuthorizationFailed,
		kafka.SASLAuthenticationFailed, kafka.UnsupportedSASLMechanism:
		return true
	}
	return false
}

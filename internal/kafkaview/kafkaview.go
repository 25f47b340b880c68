// Package kafkaview reads Kafka the way an operator looks at it, without
// joining a consumer group or committing anything: the offsets of a
// topic's partitions, a consumer group's committed offsets and lag, and
// the messages of a topic from its start (up to its current end) or from
// its end (following). mimlctl's tail and status commands use it; the
// services never do.
package kafkaview

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
)

// View reads the cluster at Brokers over a secured connection.
type View struct {
	brokers []string
	sec     kafkasec.Conn
	client  *kafka.Client
}

// New returns a view of the cluster reachable at brokers.
func New(brokers []string, sec kafkasec.Conn) *View {
	return &View{brokers: brokers, sec: sec,
		client: &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: sec.Transport()}}
}

// PartitionOffsets are the bounds of one partition's log: First is the
// oldest offset still stored, End the offset the next message will get.
type PartitionOffsets struct {
	Partition int   `json:"partition"`
	First     int64 `json:"first"`
	End       int64 `json:"end"`
}

// Partitions returns the partition ids of topic, ascending.
func (v *View) Partitions(ctx context.Context, topic string) ([]int, error) {
	md, err := v.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, fmt.Errorf("metadata of %s: %w", topic, t.Error)
		}
		ids := make([]int, 0, len(t.Partitions))
		for _, p := range t.Partitions {
			ids = append(ids, p.ID)
		}
		slices.Sort(ids)
		return ids, nil
	}
	return nil, fmt.Errorf("metadata of %s: %w", topic, kafka.UnknownTopicOrPartition)
}

// Offsets returns the first and end offsets of every partition of topic,
// by partition.
func (v *View) Offsets(ctx context.Context, topic string) ([]PartitionOffsets, error) {
	parts, err := v.Partitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	reqs := make([]kafka.OffsetRequest, 0, 2*len(parts))
	for _, p := range parts {
		reqs = append(reqs, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	resp, err := v.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	byPart := map[int]PartitionOffsets{}
	var errs []error
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			errs = append(errs, fmt.Errorf("offsets of %s/%d: %w", topic, po.Partition, po.Error))
			continue
		}
		// The response may split one partition's first and last offsets
		// over two entries, each leaving the other at -1.
		o, seen := byPart[po.Partition]
		if !seen {
			o = PartitionOffsets{Partition: po.Partition, First: -1, End: -1}
		}
		if po.FirstOffset >= 0 {
			o.First = po.FirstOffset
		}
		if po.LastOffset >= 0 {
			o.End = po.LastOffset
		}
		byPart[po.Partition] = o
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]PartitionOffsets, 0, len(parts))
	for _, p := range parts {
		o, ok := byPart[p]
		if !ok || o.First < 0 || o.End < 0 {
			return nil, fmt.Errorf("offsets of %s/%d: missing from the response", topic, p)
		}
		out = append(out, o)
	}
	return out, nil
}

// PartitionLag is a consumer group's position in one partition. Committed
// is -1 when the group has committed nothing there; Lag then counts every
// stored message.
type PartitionLag struct {
	PartitionOffsets
	Committed int64 `json:"committed"`
	Lag       int64 `json:"lag"`
}

// GroupLag returns, for every partition of topic, how far the consumer
// group's committed offset is behind the partition's end.
func (v *View) GroupLag(ctx context.Context, group, topic string) ([]PartitionLag, error) {
	offs, err := v.Offsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	parts := make([]int, len(offs))
	for i, o := range offs {
		parts[i] = o.Partition
	}
	resp, err := v.client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		return nil, fmt.Errorf("committed offsets of group %s on %s: %w", group, topic, err)
	}
	// A group that never committed may be unknown to the broker (some
	// answer so rather than with offset -1): it has committed nothing.
	if resp.Error != nil && !errors.Is(resp.Error, kafka.GroupIdNotFound) {
		return nil, fmt.Errorf("committed offsets of group %s on %s: %w", group, topic, resp.Error)
	}
	committed := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		if errors.Is(p.Error, kafka.GroupIdNotFound) {
			continue
		}
		if p.Error != nil {
			return nil, fmt.Errorf("committed offset of group %s on %s/%d: %w", group, topic, p.Partition, p.Error)
		}
		committed[p.Partition] = p.CommittedOffset
	}
	out := make([]PartitionLag, len(offs))
	for i, o := range offs {
		c, ok := committed[o.Partition]
		if !ok {
			c = -1
		}
		out[i] = PartitionLag{PartitionOffsets: o, Committed: c, Lag: lag(o, c)}
	}
	return out, nil
}

// lag is the number of stored messages at or after the committed offset
// (all of them when nothing is committed or the committed offset has been
// deleted by retention).
func lag(o PartitionOffsets, committed int64) int64 {
	from := max(committed, o.First)
	return max(o.End-from, 0)
}

// ReadOptions say which messages Read delivers. The zero value reads
// every stored message up to the end each partition had when Read
// started, and returns.
type ReadOptions struct {
	// FromEnd starts at the end of every partition instead of its oldest
	// stored message.
	FromEnd bool
	// Follow keeps reading past the end, delivering new messages until
	// ctx ends.
	Follow bool
	// MaxWait bounds how long a fetch waits for new messages (default
	// 250 ms).
	MaxWait time.Duration
}

// Read calls fn with the messages of topic, reading every partition
// concurrently (fn is never called concurrently; messages of one
// partition come in offset order). It stops without error when ctx ends
// or fn returns ErrStop, and with fn's error when fn returns another.
func (v *View) Read(ctx context.Context, topic string, o ReadOptions, fn func(kafka.Message) error) error {
	if o.MaxWait <= 0 {
		o.MaxWait = 250 * time.Millisecond
	}
	offs, err := v.Offsets(ctx, topic)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		stopped bool
		fnErr   error // the callback's error that stopped the read
	)
	deliver := func(m kafka.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return ErrStop
		}
		if err := fn(m); err != nil {
			stopped, fnErr = true, err
			return err
		}
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, po := range offs {
		if !o.Follow && (o.FromEnd || po.First >= po.End) {
			continue // nothing to read
		}
		g.Go(func() error { return v.readPartition(gctx, topic, po, o, deliver) })
	}
	err = g.Wait()
	mu.Lock()
	defer mu.Unlock()
	switch {
	case stopped && errors.Is(fnErr, ErrStop):
		return nil
	case stopped:
		return fnErr
	}
	return err
}

// ErrStop, returned by a Read callback, ends the read without error.
var ErrStop = errors.New("stop reading")

func (v *View) readPartition(ctx context.Context, topic string, po PartitionOffsets, o ReadOptions, deliver func(kafka.Message) error) error {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:        v.brokers,
		Dialer:         v.sec.Dialer(),
		Topic:          topic,
		Partition:      po.Partition,
		MinBytes:       1,
		MaxBytes:       64 << 20,
		MaxWait:        o.MaxWait,
		ReadBackoffMin: 10 * time.Millisecond,
		ReadBackoffMax: 100 * time.Millisecond,
	})
	defer r.Close()
	start := po.First
	if o.FromEnd {
		start = po.End
	}
	if err := r.SetOffset(start); err != nil {
		return fmt.Errorf("read %s/%d from %d: %w", topic, po.Partition, start, err)
	}
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read %s/%d: %w", topic, po.Partition, err)
		}
		if err := deliver(m); err != nil {
			return err
		}
		if !o.Follow && m.Offset >= po.End-1 {
			return nil
		}
	}
}

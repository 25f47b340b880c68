package kafkaio

import (
	"context"
	"sort"
	"sync"

	"github.com/segmentio/kafka-go"
)

// OffsetTracker tells a consumer with several batches in flight which
// offsets it may commit: per partition, the last message of the longest
// prefix of the fetched messages whose processing is acknowledged. A batch
// acknowledged before an older one therefore commits nothing until the
// older one is acknowledged too, so a crash never skips an unfinished
// message (at-least-once), whatever order the outputs complete in.
//
// Messages are added in fetch order, which is offset order within a
// partition. A message at or below the last one added for its partition
// (the group's reader went back to the committed offset after a
// rebalance) starts the partition afresh: the messages of the old run
// still in flight are forgotten, as their copies in the new run will be
// acknowledged in their place. That relies on what a group guarantees: a
// run starts at the committed offset, and every message before it was
// processed (this tracker never lets a commit pass an unacknowledged
// message, and neither does another member's). The committable offset never moves back: a
// prefix acknowledged once stays processed. It is safe for concurrent use.
type OffsetTracker struct {
	mu    sync.Mutex
	parts map[partitionKey]*partitionTrack
}

type partitionKey struct {
	topic     string
	partition int
}

type partitionTrack struct {
	// pending are the fetched offsets not yet part of the acknowledged
	// prefix, in fetch (ascending) order; acked marks those acknowledged.
	pending []int64
	acked   []bool
	// head is the index of the first entry of pending still in use (the
	// entries before it are dropped lazily to avoid shifting on every ack).
	head int
	// last is the last offset added; done the last offset of the
	// acknowledged prefix (-1: none).
	last, done int64
}

// NewOffsetTracker returns an empty tracker.
func NewOffsetTracker() *OffsetTracker {
	return &OffsetTracker{parts: map[partitionKey]*partitionTrack{}}
}

// Add records fetched messages, in fetch order.
func (t *OffsetTracker) Add(msgs ...kafka.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		k := partitionKey{m.Topic, m.Partition}
		p := t.parts[k]
		if p == nil {
			p = &partitionTrack{last: -1, done: -1}
			t.parts[k] = p
		}
		if m.Offset <= p.last {
			// Redelivered from an earlier offset: a new run.
			p.pending, p.acked, p.head = p.pending[:0], p.acked[:0], 0
		}
		p.pending = append(p.pending, m.Offset)
		// A redelivered message within the prefix already acknowledged
		// was processed: it holds nothing back.
		p.acked = append(p.acked, m.Offset <= p.done)
		p.last = m.Offset
		p.advance()
	}
}

// advance moves the acknowledged prefix past the acknowledged messages at
// its head.
func (p *partitionTrack) advance() {
	for p.head < len(p.pending) && p.acked[p.head] {
		p.done = max(p.done, p.pending[p.head])
		p.head++
	}
	if p.head == len(p.pending) {
		p.pending, p.acked, p.head = p.pending[:0], p.acked[:0], 0
	} else if p.head > 1024 && p.head > len(p.pending)/2 {
		n := copy(p.pending, p.pending[p.head:])
		copy(p.acked, p.acked[p.head:])
		p.pending, p.acked, p.head = p.pending[:n], p.acked[:n], 0
	}
}

// Ack records that the processing of msgs is complete (their outputs are
// acknowledged). A message not in flight (forgotten by a new run) is
// ignored.
func (t *OffsetTracker) Ack(msgs ...kafka.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		p := t.parts[partitionKey{m.Topic, m.Partition}]
		if p == nil {
			continue
		}
		live := p.pending[p.head:]
		i := sort.Search(len(live), func(i int) bool { return live[i] >= m.Offset })
		if i == len(live) || live[i] != m.Offset {
			continue
		}
		p.acked[p.head+i] = true
		p.advance()
	}
}

// Forget drops what the tracker holds of a partition: its log was
// replaced (a recreated topic), so its offsets count records of another log,
// and the committable offset, which otherwise never moves back, starts
// again.
func (t *OffsetTracker) Forget(topic string, partition int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.parts, partitionKey{topic, partition})
}

// Committable returns, per partition with an acknowledged prefix, its last
// message (committing it commits the offset after it), ordered by topic
// and partition.
func (t *OffsetTracker) Committable() []kafka.Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []kafka.Message
	for k, p := range t.parts {
		if p.done >= 0 {
			out = append(out, kafka.Message{Topic: k.topic, Partition: k.partition, Offset: p.done})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// InFlight returns how many added messages are not yet in an acknowledged
// prefix.
func (t *OffsetTracker) InFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, p := range t.parts {
		n += len(p.pending) - p.head
	}
	return n
}

// Committer is what commits offsets: a consumer-group kafka.Reader.
type Committer interface {
	CommitMessages(ctx context.Context, msgs ...kafka.Message) error
}

// CommitProgress commits the committable offsets of t that moved since the
// last successful call (sent holds what was committed: the caller keeps
// it between calls). It returns how many partitions it committed.
func CommitProgress(ctx context.Context, c Committer, t *OffsetTracker, sent map[string]map[int]int64) (int, error) {
	var todo []kafka.Message
	for _, m := range t.Committable() {
		if prev, ok := sent[m.Topic][m.Partition]; ok && prev >= m.Offset {
			continue
		}
		todo = append(todo, m)
	}
	if len(todo) == 0 {
		return 0, nil
	}
	if err := c.CommitMessages(ctx, todo...); err != nil {
		return 0, err
	}
	for _, m := range todo {
		if sent[m.Topic] == nil {
			sent[m.Topic] = map[int]int64{}
		}
		sent[m.Topic][m.Partition] = m.Offset
	}
	return len(todo), nil
}

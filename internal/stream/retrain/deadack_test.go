package retrain

import (
	"context"
	"testing"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"
)

// TestDeadLetterOfAReplacedLogIsNotAcknowledged: a training message's dead
// letter is written after the message was read, and acknowledges its
// offset to the tracker then. When the partition's log was replaced in
// between (read again from its start), that offset names another record,
// of the new log, still in flight: acknowledging it would let a version's
// training offsets pass a record whose handling is not complete.
func TestDeadLetterOfAReplacedLogIsNotAcknowledged(t *testing.T) {
	h := newHarness(t)
	r := h.retrainer(nil)
	ctx, cancel := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(ctx)
	out := make(chan fetched, 64)
	r.follows.mu.Lock()
	r.follows.parts = map[int]*partitionFollow{}
	r.startFollowerLocked(gctx, g, out, 0, 0, 0, false)
	r.follows.mu.Unlock()

	old := kafka.Message{Topic: h.topics.Train, Partition: 0, Offset: 5}
	r.track.Add(old)
	job := r.deadJobFor(old)
	r.resetPartition(gctx, g, out, 0, 0, 0) // the log replaced
	fresh := kafka.Message{Topic: h.topics.Train, Partition: 0, Offset: 5}
	r.track.Add(fresh) // the new log's record at the same offset, in flight
	r.ackDeadLetter(job)
	next := r.nextOffsets()
	t.Logf("after the old record's dead letter is out: next offsets %v (want none for partition 0)", next)
	if off, ok := next[0]; ok {
		t.Errorf("partition 0's next offset %d: the old log's dead letter acknowledged the new log's record", off)
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

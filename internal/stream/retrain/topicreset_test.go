package retrain

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// windowIDs returns the ids of the window's bags, sorted.
func windowIDs(r *Retrainer) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.order))
}

// windowOf returns the sorted ids of bags.
func windowOf(bags []mil.Bag) []string {
	var ids []string
	for _, b := range bags {
		ids = append(ids, b.ID)
	}
	return slices.Sorted(slices.Values(ids))
}

// TestRetrainerFollowsATopicReset changes the training topic under a
// running retrainer as an operator does: deleted and recreated (with as
// many partitions, fewer or more), or given more partitions. The bags of
// the new topic are produced at once, so that each new partition grows past
// the offset the retrainer had read before it looks: a check of the offset
// against the partition's end alone then finds nothing wrong, and the
// reader goes on from its old offset in the new log, skipping the bags
// below it. The window must end up as a restarted retrainer would rebuild
// it: the new topic's bags only after a recreation (the old ones belong to
// a log that no longer exists), the old and the new ones when partitions
// were only added, which are followed from their start.
func TestRetrainerFollowsATopicReset(t *testing.T) {
	cases := []struct {
		name       string
		before     int // partitions before
		after      int // partitions after
		recreate   bool
		keepsOlder bool // the old topic's bags stay in the window
		// hasty: the retrainer starts on the empty topic, and the topic is
		// recreated as soon as the old bags are in the window, with no
		// check in between (no record checked yet).
		hasty bool
	}{
		{name: "recreated with as many partitions", before: 3, after: 3, recreate: true},
		{name: "recreated with fewer partitions", before: 3, after: 1, recreate: true},
		{name: "recreated with more partitions", before: 2, after: 4, recreate: true},
		{name: "partitions added", before: 2, after: 4, keepsOlder: true},
		{name: "recreated before any check", before: 4, after: 4, recreate: true, hasty: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cl := &kafka.Client{Addr: kafka.TCP(h.brokers...), Timeout: 10 * time.Second}
			create := func(n int) {
				t.Helper()
				res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: h.topics.Train, NumPartitions: n, ReplicationFactor: 1}}})
				if err != nil {
					t.Fatal(err)
				}
				if err := res.Errors[h.topics.Train]; err != nil {
					t.Fatal(err)
				}
			}
			remove := func() {
				t.Helper()
				res, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{h.topics.Train}})
				if err != nil {
					t.Fatal(err)
				}
				if err := res.Errors[h.topics.Train]; err != nil {
					t.Fatal(err)
				}
			}
			// The harness's topics have 3 partitions.
			remove()
			create(tc.before)
			ds := streamtest.SmallDataset(120)
			old, fresh := ds.Bags[:30], ds.Bags[30:]
			if !tc.hasty {
				h.writeBags(ctx, ds, old)
			}
			r := h.retrainer(func(c *RetrainerConfig) {
				c.Every = 10000
				c.ReachCheck = time.Second
				c.Obs = service.Observability{Logger: streamtest.Logger(t)}
			})
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			if tc.hasty {
				streamtest.WaitFor(t, 20*time.Second, "the window rebuilt", func() bool { ok, _ := r.Ready(); return ok })
				h.writeBags(ctx, ds, old)
			}
			streamtest.WaitFor(t, 20*time.Second, "the window of the old topic", func() bool { return r.Len() == len(old) })
			if !tc.hasty {
				// Let a few reach checks pass on the old topic.
				time.Sleep(2500 * time.Millisecond)
			}

			if tc.recreate {
				remove()
				create(tc.after)
			} else {
				res, err := cl.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{{Name: h.topics.Train, Count: int32(tc.after)}}})
				if err != nil {
					t.Fatal(err)
				}
				if err := res.Errors[h.topics.Train]; err != nil {
					t.Fatal(err)
				}
			}
			h.writeBags(ctx, ds, fresh)
			want := windowOf(fresh)
			if tc.keepsOlder {
				want = windowOf(ds.Bags)
			}
			var got []string
			for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				if got = windowIDs(r); slices.Equal(got, want) {
					break
				}
			}
			missing, stale := 0, 0
			for _, id := range want {
				if !slices.Contains(got, id) {
					missing++
				}
			}
			for _, id := range got {
				if !slices.Contains(want, id) {
					stale++
				}
			}
			t.Logf("%d -> %d partitions: window of %d bags, want %d: %d of the new topic's bags missing, %d bags of the old topic kept",
				tc.before, tc.after, len(got), len(want), missing, stale)
			if missing > 0 || stale > 0 {
				t.Errorf("the window is not the topic's: %d bags missing, %d stale", missing, stale)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}

package kafkaio

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/segmentio/kafka-go"
)

// referenceDone is the brute-force committable offset of one partition's
// run: the largest offset o of seq such that every offset of seq up to o
// is acked (-1 when the first is not), or floor if larger.
func referenceDone(seq []int64, acked map[int64]bool, floor int64) int64 {
	done := int64(-1)
	for _, o := range seq {
		if !acked[o] {
			break
		}
		done = o
	}
	return max(done, floor)
}

// TestOffsetTrackerMatchesBruteForce acks random runs of offsets (with
// gaps, as compaction and transaction markers leave) in random orders on
// several partitions and checks after every ack that the committable
// offset is the end of the longest acked prefix. Catches a tracker that
// commits past an unacknowledged message (loss on a crash), or that stops
// advancing (a stalled commit), or mixes up partitions.
func TestOffsetTrackerMatchesBruteForce(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tr := NewOffsetTracker()
		nparts := 1 + rng.IntN(3)
		seqs := make([][]int64, nparts)
		var all []kafka.Message
		for p := range nparts {
			off := int64(rng.IntN(5))
			for range 1 + rng.IntN(60) {
				seqs[p] = append(seqs[p], off)
				all = append(all, kafka.Message{Topic: "t", Partition: p, Offset: off})
				off += 1 + int64(rng.IntN(3)) // gaps
			}
		}
		// Fetch order interleaves partitions but keeps each in order.
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		for p := range nparts {
			k := 0
			for i := range all {
				if all[i].Partition == p {
					all[i].Offset = seqs[p][k]
					k++
				}
			}
		}
		// Add in batches, ack in random order, interleaving adds and acks.
		acked := make([]map[int64]bool, nparts)
		for p := range acked {
			acked[p] = map[int64]bool{}
		}
		var added []kafka.Message
		next := 0
		check := func(step string) {
			t.Helper()
			got := map[int]int64{}
			for _, m := range tr.Committable() {
				got[m.Partition] = m.Offset
			}
			for p := range nparts {
				var seen []int64
				for _, m := range added {
					if m.Partition == p {
						seen = append(seen, m.Offset)
					}
				}
				want := referenceDone(seen, acked[p], -1)
				g, ok := got[p]
				if !ok {
					g = -1
				}
				if g != want {
					t.Fatalf("seed %d %s: partition %d committable %d, brute force %d", seed, step, p, g, want)
				}
			}
		}
		var unacked []kafka.Message
		for next < len(all) || len(unacked) > 0 {
			if next < len(all) && (len(unacked) == 0 || rng.IntN(2) == 0) {
				n := min(len(all)-next, 1+rng.IntN(8))
				batch := all[next : next+n]
				next += n
				tr.Add(batch...)
				added = append(added, batch...)
				unacked = append(unacked, batch...)
				check("add")
				continue
			}
			i := rng.IntN(len(unacked))
			m := unacked[i]
			unacked = append(unacked[:i], unacked[i+1:]...)
			tr.Ack(m)
			acked[m.Partition][m.Offset] = true
			check("ack")
		}
		if n := tr.InFlight(); n != 0 {
			t.Fatalf("seed %d: %d in flight after every ack", seed, n)
		}
	}
}

// TestOffsetTrackerRedeliveryStartsAfresh replays a partition from an
// earlier offset (a rebalance sent the reader back to the committed
// offset): the committable offset keeps the prefix already acknowledged,
// the old run's late acks are ignored, and the new run advances it only
// past what it acknowledges itself. Catches a tracker that stalls on the
// forgotten run or commits a redelivered message before it is processed.
func TestOffsetTrackerRedeliveryStartsAfresh(t *testing.T) {
	m := func(o int64) kafka.Message { return kafka.Message{Topic: "t", Partition: 0, Offset: o} }
	tr := NewOffsetTracker()
	tr.Add(m(0), m(1), m(2), m(3))
	tr.Ack(m(0), m(1))
	want := func(o int64) {
		t.Helper()
		c := tr.Committable()
		if len(c) != 1 || c[0].Offset != o {
			t.Fatalf("committable %v, want offset %d", c, o)
		}
	}
	want(1)
	tr.Add(m(1), m(2), m(3), m(4)) // redelivered from 1: 1 is done already
	tr.Ack(m(3))                   // old run's 3 (or new run's: not a prefix yet)
	want(1)
	tr.Ack(m(2))
	want(3)
	tr.Ack(m(4))
	want(4)
}

type fakeCommitter struct {
	calls [][]kafka.Message
}

func (f *fakeCommitter) CommitMessages(_ context.Context, msgs ...kafka.Message) error {
	f.calls = append(f.calls, append([]kafka.Message(nil), msgs...))
	return nil
}

// TestCommitProgressCommitsOnlyMoves commits twice with no progress in
// between: the second call sends nothing. Catches a committer that sends
// a commit request per tick for nothing (load on the coordinator).
func TestCommitProgressCommitsOnlyMoves(t *testing.T) {
	tr := NewOffsetTracker()
	c := &fakeCommitter{}
	sent := map[string]map[int]int64{}
	tr.Add(kafka.Message{Topic: "t", Partition: 0, Offset: 5}, kafka.Message{Topic: "t", Partition: 1, Offset: 9})
	tr.Ack(kafka.Message{Topic: "t", Partition: 0, Offset: 5})
	for range 2 {
		if _, err := CommitProgress(context.Background(), c, tr, sent); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.calls) != 1 || len(c.calls[0]) != 1 || c.calls[0][0].Partition != 0 || c.calls[0][0].Offset != 5 {
		t.Fatalf("commits %v, want one of partition 0 offset 5", c.calls)
	}
}

// TestOffsetTrackerSafeUnderRedelivery fetches one partition in runs that
// restart at random earlier offsets at or below the committable one (as a
// rebalance sends the reader back to the committed offset), with acknowledgements of old and new runs
// interleaved at random. After every step, every fetched offset up to the
// committable one must have been acknowledged in some run (safety: a crash
// then loses nothing), and once the last run is acknowledged whole the
// committable offset is its last (liveness). Catches a tracker that lets
// an old run's acknowledgement stand for a message the new run has not
// redone, or that never advances after a redelivery.
func TestOffsetTrackerSafeUnderRedelivery(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 11))
		tr := NewOffsetTracker()
		msg := func(o int64) kafka.Message { return kafka.Message{Topic: "t", Offset: o} }
		acked := map[int64]bool{} // acknowledged in some run
		fetched := map[int64]bool{}
		var unacked []int64
		next := int64(0)
		var lastRun []int64
		for step := range 200 {
			switch r := rng.IntN(10); {
			case r < 4: // fetch more
				n := 1 + rng.IntN(5)
				for range n {
					tr.Add(msg(next))
					fetched[next] = true
					unacked = append(unacked, next)
					lastRun = append(lastRun, next)
					next++
				}
			case r < 5 && next > 0: // redelivery from an earlier offset
				// The group restarts from its committed offset: at most
				// the one after the committable message (a commit not yet
				// sent leaves it lower).
				upTo := int64(0)
				if c := tr.Committable(); len(c) > 0 {
					upTo = c[0].Offset + 1
				}
				next = rng.Int64N(min(upTo, next) + 1)
				lastRun = nil
			default: // acknowledge something in flight
				if len(unacked) == 0 {
					continue
				}
				i := rng.IntN(len(unacked))
				o := unacked[i]
				unacked = append(unacked[:i], unacked[i+1:]...)
				tr.Ack(msg(o))
				acked[o] = true
			}
			c := tr.Committable()
			if len(c) == 0 {
				continue
			}
			for o := int64(0); o <= c[0].Offset; o++ {
				if fetched[o] && !acked[o] {
					t.Fatalf("seed %d step %d: committable %d but offset %d never acknowledged", seed, step, c[0].Offset, o)
				}
			}
		}
		for _, o := range lastRun {
			tr.Ack(msg(o))
		}
		if len(lastRun) > 0 {
			c := tr.Committable()
			if want := lastRun[len(lastRun)-1]; len(c) != 1 || c[0].Offset < want {
				t.Fatalf("seed %d: committable %v after the last run was acknowledged whole, want %d", seed, c, want)
			}
		}
	}
}

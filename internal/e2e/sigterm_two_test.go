package e2e

import (
	"context"
	"testing"
	"time"
)

// TestSIGTERMOfOneOfTwoMembers measures what a graceful stop of one of two
// annotators costs: the bags annotated twice (annotations less distinct
// bags). The stopping member drains and commits what it finished before
// leaving the group, so nothing is lost; but the rebalance its leaving
// causes makes the member that stays resume its own partitions too from
// their last commit (kafka-go has no hook to commit before rejoining), so
// it annotates again what it had read but not committed: at most its
// batches in flight (--max-in-flight x --batch-size, 4 x 64) and the
// reader's read-ahead (100 messages), with what it finished in the last
// --commit-interval. The README says so; this holds that bound.
func TestSIGTERMOfOneOfTwoMembers(t *testing.T) {
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	e.promote(blob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := e.tail(ctx)
	first := e.startAnnotator("first", annotatorOpts{})
	e.startAnnotator("second", annotatorOpts{})
	pub := e.publisher(0.5)
	published := publishPaced(ctx, pub, ds, 40*time.Millisecond)
	out.waitIDs(t, len(ds.Bags)/3, 60*time.Second)
	first.terminate(t, 30*time.Second)
	stoppedAt, atStop, _ := out.counts()
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	out.waitIDs(t, len(ds.Bags), 90*time.Second)
	ids, total, dead := out.counts()
	// Which member annotated each bag twice: the stopping one before and
	// the staying one after, or the staying one twice.
	pairs := map[string]int{}
	out.mu.Lock()
	for _, as := range out.anns {
		if len(as) > 1 {
			pairs[as[0].Annotator+" then "+as[len(as)-1].Annotator]++
		}
	}
	out.mu.Unlock()
	t.Logf("duplicates by annotators: %v", pairs)
	t.Logf("SIGTERM of one of two members after %d bags (%d duplicates then); at the end %d bags annotated, %d annotations: %d duplicates, %d dead letters",
		stoppedAt, atStop-stoppedAt, ids, total, total-ids, dead)
	// Per rebalance: batches in flight, read-ahead, and a commit
	// interval's worth at this pace (about 100 bags).
	const bound = 4*64 + 100 + 100
	if after := (total - ids) - (atStop - stoppedAt); ids != len(ds.Bags) || dead != 0 || after > bound {
		t.Errorf("%d bags annotated twice after a graceful stop of one of two members (bound %d), %d of %d bags annotated, %d dead letters",
			after, bound, ids, len(ds.Bags), dead)
	}
}

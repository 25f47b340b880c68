package annotate

import (
	"maps"
	"testing"
	"time"
)

// TestLagTracker catches a lag per partition that keeps a stale partition
// (revoked in a rebalance) or reports a negative lag.
func TestLagTracker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newLagTracker(30 * time.Second)
	if got := l.Partitions(t0); len(got) != 0 {
		t.Fatalf("lag reported before any message: %v", got)
	}
	l.Observe(0, 10, t0)
	l.Observe(1, 5, t0)
	l.Observe(0, 3, t0.Add(time.Second)) // newer message of partition 0
	l.Observe(2, -1, t0)                 // a high-water mark behind the offset counts as caught up
	if got, want := l.Partitions(t0.Add(time.Second)), map[int]int64{0: 3, 1: 5, 2: 0}; !maps.Equal(got, want) {
		t.Errorf("lag %v, want %v", got, want)
	}
	l.Observe(1, 7, t0.Add(40*time.Second))
	if got, want := l.Partitions(t0.Add(40*time.Second)), map[int]int64{1: 7}; !maps.Equal(got, want) {
		t.Errorf("after partitions 0 and 2 went stale: %v, want %v", got, want)
	}
}

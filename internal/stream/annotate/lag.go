package annotate

import (
	"maps"
	"sync"
	"time"
)

// lagTracker keeps the consumer lag of each partition this member served
// recently. kafka-go reports no lag for consumer-group readers, but every
// message carries its partition's high-water mark. Partitions not seen for
// a while (revoked in a rebalance, or idle and caught up) drop out.
type lagTracker struct {
	mu     sync.Mutex
	maxAge time.Duration
	parts  map[int]lagEntry
}

type lagEntry struct {
	lag int64
	at  time.Time
}

func newLagTracker(maxAge time.Duration) *lagTracker {
	return &lagTracker{maxAge: maxAge, parts: map[int]lagEntry{}}
}

// Observe records the lag of a partition after a message.
func (l *lagTracker) Observe(partition int, lag int64, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parts[partition] = lagEntry{lag: max(lag, 0), at: t}
}

// Partitions returns the lag of each partition seen within maxAge of t.
func (l *lagTracker) Partitions(t time.Time) map[int]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int]int64, len(l.parts))
	maps.DeleteFunc(l.parts, func(_ int, e lagEntry) bool { return t.Sub(e.at) > l.maxAge })
	for p, e := range l.parts {
		out[p] = e.lag
	}
	return out
}

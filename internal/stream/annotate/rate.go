package annotate

import (
	"sync"
	"time"
)

// rateMeter measures events per second over a sliding window of one-second
// buckets.
type rateMeter struct {
	mu      sync.Mutex
	window  time.Duration
	buckets map[int64]int
}

func newRateMeter(window time.Duration) *rateMeter {
	return &rateMeter{window: window, buckets: map[int64]int{}}
}

// Add records n events at t.
func (r *rateMeter) Add(t time.Time, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buckets[t.Unix()] += n
	r.evict(t)
}

func (r *rateMeter) evict(t time.Time) {
	oldest := t.Add(-r.window).Unix()
	for s := range r.buckets {
		if s <= oldest {
			delete(r.buckets, s)
		}
	}
}

// Rate returns events per second over the window ending at t.
func (r *rateMeter) Rate(t time.Time) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evict(t)
	n := 0
	for _, c := range r.buckets {
		n += c
	}
	return float64(n) / r.window.Seconds()
}

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

// Total returns the summed lag of the partitions seen within maxAge of t,
// and false when there is none.
func (l *lagTracker) Total(t time.Time) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum int64
	n := 0
	for p, e := range l.parts {
		if t.Sub(e.at) > l.maxAge {
			delete(l.parts, p)
			continue
		}
		sum += e.lag
		n++
	}
	return sum, n > 0
}

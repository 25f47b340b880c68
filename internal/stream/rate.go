package stream

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

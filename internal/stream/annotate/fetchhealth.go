package annotate

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// fetchFailures is the run of failed fetches since the last message
// fetched. The input probe (source.go) sees a topic with a leader for every
// partition; it cannot see a reader that the leaders refuse: a partition
// whose log is unreadable (KAFKA_STORAGE_ERROR), an offset error, any
// error the Kafka client hands back on every fetch. The consumer then
// annotates nothing, and readiness must say so.
type fetchFailures struct {
	// failing is set while a run is open, so that a fetch that succeeds
	// (every message) costs an atomic load, not a lock.
	failing atomic.Bool
	mu      sync.Mutex
	// since is the first failure of the run, last the latest; err and n
	// its latest error and length.
	since, last time.Time
	err         error
	n           int
}

// failed records a failed fetch; it returns true for the first of a run.
func (f *fetchFailures) failed(err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	first := f.n == 0
	if first {
		f.since = now
	}
	f.last, f.err = now, err
	f.n++
	f.failing.Store(true)
	return first
}

// fetched records a message fetched: the run, if any, is over. It returns
// how long the run lasted and how many fetches failed (0: none).
func (f *fetchFailures) fetched() (time.Duration, int) {
	if !f.failing.Load() {
		return 0, 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d, n := time.Since(f.since), f.n
	f.n, f.err = 0, nil
	f.failing.Store(false)
	return d, n
}

// problem is the readiness line of fetches that have failed for longer
// than after, the latest within after ("" otherwise). A fetch blocks
// while the topic is quiet, so a run ends with a message; a run whose
// errors stopped without one (the reader recovered, nothing to read) is
// not a problem once after has passed since its last error.
func (f *fetchFailures) problem(after time.Duration, topic string) string {
	if !f.failing.Load() {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 || time.Since(f.since) < after || time.Since(f.last) > after {
		return ""
	}
	return fmt.Sprintf("not ready: fetching from %s has failed for %v (%d fetches, none succeeded; the partitions have leaders): %v",
		topic, time.Since(f.since).Round(time.Second), f.n, f.err)
}

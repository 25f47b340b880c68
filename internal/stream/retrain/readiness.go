package retrain

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// DefaultFrozenAfter is how long the retrainer's position in a partition
// may stay still while the partition ends beyond it, no refit running,
// before Ready reports a frozen window.
const DefaultFrozenAfter = 5 * time.Minute

// DefaultRefitTimeout bounds one refit. A refit holds the window still
// while it runs (the consumer refits between messages), so the window's
// frozen check leaves it out, and this bound is what ends a fit that
// would never end.
const DefaultRefitTimeout = time.Hour

// ErrRefitTimeout marks a refit cancelled by RefitTimeout.
var ErrRefitTimeout = errors.New("refit timed out")

// refitting records a refit starting or ending, for stalled: while one
// runs the window is still on purpose, and the stillness after it counts
// from its end.
func (r *Retrainer) refitting(on bool) {
	r.follows.mu.Lock()
	defer r.follows.mu.Unlock()
	r.follows.refitting = on
	if !on {
		r.follows.refitEnded = time.Now()
	}
}

// stalled reports why the window cannot move, if it cannot: the training
// topic does not exist, or a partition ends beyond the offset the retrainer
// reads and that offset has not moved for FrozenAfter, no refit running
// meanwhile (a reader stuck; a refit that does not end is RefitTimeout's).
// New training bags would then wait unseen while /readyz said ok. The
// partitions' ends are those of the watcher's last check (follow.go).
func (r *Retrainer) stalled() (string, bool) {
	r.follows.mu.Lock()
	defer r.follows.mu.Unlock()
	if err := r.follows.missing; err != nil {
		return fmt.Sprintf("training topic %s missing: %v", r.cfg.Topic, err), true
	}
	if r.follows.refitting {
		return "", false
	}
	for _, p := range slices.Sorted(maps.Keys(r.follows.parts)) {
		pf := r.follows.parts[p]
		since := pf.moved
		if r.follows.refitEnded.After(since) {
			since = r.follows.refitEnded
		}
		if still := time.Since(since); pf.end > pf.next && still > r.cfg.FrozenAfter {
			return fmt.Sprintf("window frozen: partition %d of %s ends at offset %d, the retrainer is at %d and has not moved for %v (more than %v)",
				p, r.cfg.Topic, pf.end, pf.next, still.Round(100*time.Millisecond), r.cfg.FrozenAfter), true
		}
	}
	return "", false
}

package retrain

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// DefaultFrozenAfter is how long the retrainer's position in a partition
// may stay still while the partition ends beyond it before Ready reports a
// frozen window. A refit holds the window still while it runs (the
// consumer refits between messages), so it must exceed the longest refit.
const DefaultFrozenAfter = 5 * time.Minute

// stalled reports why the window cannot move, if it cannot: the training
// topic does not exist, or a partition ends beyond the offset the retrainer
// reads and that offset has not moved for FrozenAfter (a reader stuck, or a
// refit that does not end). New training bags would then wait unseen while
// /readyz said ok. The partitions' ends are those of the watcher's last
// check (follow.go).
func (r *Retrainer) stalled() (string, bool) {
	r.follows.mu.Lock()
	defer r.follows.mu.Unlock()
	if err := r.follows.missing; err != nil {
		return fmt.Sprintf("training topic %s missing: %v", r.cfg.Topic, err), true
	}
	for _, p := range slices.Sorted(maps.Keys(r.follows.parts)) {
		pf := r.follows.parts[p]
		if still := time.Since(pf.moved); pf.end > pf.next && still > r.cfg.FrozenAfter {
			return fmt.Sprintf("window frozen: partition %d of %s ends at offset %d, the retrainer is at %d and has not moved for %v (more than %v)",
				p, r.cfg.Topic, pf.end, pf.next, still.Round(100*time.Millisecond), r.cfg.FrozenAfter), true
		}
	}
	return "", false
}

package streamtest

import (
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/testsupport/realpart"
)

// TestWaitExplained: a condition that holds ends the wait without failing;
// one that never does fails after the limit with the explanation of the
// last state, written when the limit passed.
func TestWaitExplained(t *testing.T) {
	polls := 0
	if d := WaitExplained(t, time.Second, time.Millisecond, func() bool { polls++; return polls == 3 }, func() string { return "unused" }); d > time.Second || polls != 3 {
		t.Errorf("waited %v over %d polls, want 3 polls", d, polls)
	}
	r := &realpart.Recorder{TB: t}
	seen := 0
	WaitExplained(r, 30*time.Millisecond, 5*time.Millisecond, func() bool { seen++; return false },
		func() string { return "last state " + strings.Repeat("x", min(seen, 1)) })
	if !strings.HasPrefix(r.FailMsg, "last state x: not within 30ms") || seen < 2 {
		t.Errorf("failure %q after %d polls", r.FailMsg, seen)
	}
}

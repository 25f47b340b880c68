// Package realpart stops a test that needs a real part of the deployment
// (Redis, Chromium, redis-server) when that part is not there. Under
// CI=true the test fails, because a green CI run must have run it;
// elsewhere it is skipped, so that a developer without the part can still
// run the rest.
package realpart

import (
	"fmt"
	"os"
	"testing"
)

// CI reports whether the tests run under CI=true, where a missing part is a
// failure.
func CI() bool { return os.Getenv("CI") == "true" }

// Missing stops t because a part it needs is absent; what says which part
// and how to provide it. It fails under CI=true and skips otherwise.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("CI=true but %s", what)
		return // Fatalf does not return; the return is for a TB that records
	}
	t.Skipf("skipped: %s (with CI=true this fails)", what)
}

// Recorder is a testing.TB that records how a helper stopped a test
// instead of stopping it, for the tests of such helpers (Missing,
// redistest.Real).
type Recorder struct {
	testing.TB
	FailMsg, SkipMsg string
}

// Helper does nothing: the recorder reports no lines.
func (r *Recorder) Helper() {}

// Fatalf records the failure; the calling goroutine goes on.
func (r *Recorder) Fatalf(format string, args ...any) { r.FailMsg = fmt.Sprintf(format, args...) }

// Skipf records the skip; the calling goroutine goes on.
func (r *Recorder) Skipf(format string, args ...any) { r.SkipMsg = fmt.Sprintf(format, args...) }

package realpart

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test was stopped instead of
// stopping the goroutine.
type recorder struct {
	testing.TB
	failed, skipped string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Fatalf(f string, args ...any) { r.failed = fmt.Sprintf(f, args...) }
func (r *recorder) Skipf(f string, args ...any)  { r.skipped = fmt.Sprintf(f, args...) }

func TestMissingFailsUnderCI(t *testing.T) {
	for _, tc := range []struct {
		ci                 string
		wantFail, wantSkip bool
	}{
		{"true", true, false},
		{"", false, true},
		{"false", false, true},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &recorder{TB: t}
			Missing(r, "no Redis answers at %s", "127.0.0.1:1")
			if (r.failed != "") != tc.wantFail || (r.skipped != "") != tc.wantSkip {
				t.Fatalf("failed %q skipped %q; want fail %v skip %v", r.failed, r.skipped, tc.wantFail, tc.wantSkip)
			}
			if msg := r.failed + r.skipped; !strings.Contains(msg, "no Redis answers at 127.0.0.1:1") {
				t.Fatalf("message %q does not name the missing part", msg)
			}
		})
	}
}

package realpart

import (
	"strings"
	"testing"
)

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
			r := &Recorder{TB: t}
			Missing(r, "no Redis answers at %s", "127.0.0.1:1")
			if (r.FailMsg != "") != tc.wantFail || (r.SkipMsg != "") != tc.wantSkip {
				t.Fatalf("failed %q skipped %q; want fail %v skip %v", r.FailMsg, r.SkipMsg, tc.wantFail, tc.wantSkip)
			}
			if msg := r.FailMsg + r.SkipMsg; !strings.Contains(msg, "no Redis answers at 127.0.0.1:1") {
				t.Fatalf("message %q does not name the missing part", msg)
			}
		})
	}
}

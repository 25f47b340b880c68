package redistest

import (
	"net"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/testsupport/realpart"
)

// TestRealWhenNoneAnswers: pointed at a port nobody listens on, Real fails
// the test under CI=true and skips it otherwise, naming the address and
// the variable that moves it.
func TestRealWhenNoneAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	t.Setenv(AddrEnv, dead)
	for _, ci := range []string{"true", ""} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("CI", ci)
			r := &realpart.Recorder{TB: t}
			Real(r)
			got := r.SkipMsg
			if ci == "true" {
				got = r.FailMsg
			}
			if got == "" || !strings.Contains(got, dead) || !strings.Contains(got, AddrEnv) {
				t.Fatalf("failed %q skipped %q: want the %s stop naming %s and %s", r.FailMsg, r.SkipMsg, map[bool]string{true: "failing", false: "skipping"}[ci == "true"], dead, AddrEnv)
			}
		})
	}
}

// TestRealAnswers: the Redis of make test answers at Addr.
func TestRealAnswers(t *testing.T) {
	if got := Real(t); got != Addr() {
		t.Fatalf("Real = %s, want %s", got, Addr())
	}
}

package redistest

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// stopRecorder is a testing.TB that records how Real stopped a test
// instead of stopping the goroutine.
type stopRecorder struct {
	testing.TB
	failed, skipped string
}

func (r *stopRecorder) Helper()                      {}
func (r *stopRecorder) Fatalf(f string, args ...any) { r.failed = fmt.Sprintf(f, args...) }
func (r *stopRecorder) Skipf(f string, args ...any)  { r.skipped = fmt.Sprintf(f, args...) }

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
			r := &stopRecorder{TB: t}
			Real(r)
			got := r.skipped
			if ci == "true" {
				got = r.failed
			}
			if got == "" || !strings.Contains(got, dead) || !strings.Contains(got, AddrEnv) {
				t.Fatalf("failed %q skipped %q: want the %s stop naming %s and %s", r.failed, r.skipped, map[bool]string{true: "failing", false: "skipping"}[ci == "true"], dead, AddrEnv)
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

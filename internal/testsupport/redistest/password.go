package redistest

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/testsupport/realpart"
)

// StartPasswordRedis starts a redis-server on a free loopback port that
// requires password pw (requirepass, no ACL user), and returns its
// address; the server is killed at cleanup. When redis-server is not
// installed the test stops (realpart.Missing: it fails under CI=true, is
// skipped elsewhere). Readiness is a TCP connect, not a PING: without the
// password PING is refused.
func StartPasswordRedis(t testing.TB, pw string) string {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		realpart.Missing(t, "redis-server is not installed (apt-get install redis-server)")
	}
	port := freePort(t)
	dir := t.TempDir()
	cmd := exec.Command(server, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--requirepass", pw,
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(end) {
			t.Fatalf("redis-server on %s did not start", addr)
		}
	}
}

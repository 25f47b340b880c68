package redisflag

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/testsupport/realpart"
)

// startPasswordRedis starts a redis-server that requires password pw and
// returns its address.
func startPasswordRedis(t *testing.T, pw string) string {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		realpart.Missing(t, "redis-server is not installed (apt-get install redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
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

// TestConnectAuthFailureIsFinal: a wrong Redis password (or none where one
// is required) ends Connect at once with ErrAuth, as a wrong Kafka
// password ends the Kafka check, instead of retrying until the context
// ends with no sign but a log line; the right one connects.
func TestConnectAuthFailureIsFinal(t *testing.T) {
	addr := startPasswordRedis(t, "right-password")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"wrong password", Config{Addr: addr, Password: "wrong-password"}},
		{"no password", Config{Addr: addr}},
		{"wrong user", Config{Addr: "redis://nobody:right-password@" + addr}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		rdb, err := tc.cfg.Connect(ctx, log)
		took := time.Since(start)
		cancel()
		t.Logf("%s: %v after %v", tc.name, err, took.Round(time.Millisecond))
		if rdb != nil {
			rdb.Close()
		}
		if !errors.Is(err, ErrAuth) || took > 3*time.Second {
			t.Errorf("%s: %v after %v; want ErrAuth at once", tc.name, err, took)
		}
		if err != nil && strings.Contains(err.Error(), "wrong-password") {
			t.Errorf("%s: the password appears in the error: %v", tc.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb, err := Config{Addr: addr, Password: "right-password"}.Connect(ctx, log)
	if err != nil {
		t.Fatalf("right password: %v", err)
	}
	rdb.Close()
}

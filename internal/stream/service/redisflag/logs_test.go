package redisflag

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/testsupport/syncbuf"
)

// TestRouteLogs: go-redis's own lines during an outage (a pool that cannot
// dial) reach the service's slog logger, structured, once, and not the
// standard log package's unstructured stderr.
func TestRouteLogs(t *testing.T) {
	var buf syncbuf.Buffer
	// Other tests of the package connected first: route as a fresh
	// process would.
	redisLogs = sync.Once{}
	RouteLogs(slog.New(slog.NewTextHandler(&buf, nil)))
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	for range 4 {
		if err := rdb.Ping(context.Background()).Err(); err == nil {
			t.Fatal("ping of 127.0.0.1:1 succeeded")
		}
	}
	out := buf.String()
	lines := strings.Count(out, "\n")
	if lines != 1 || !strings.Contains(out, "level=WARN") || !strings.Contains(out, "component=go-redis") || !strings.Contains(out, "connection refused") {
		t.Fatalf("%d lines through slog, want 1 structured WARN line:\n%s", lines, out)
	}
	t.Logf("through slog: %s", strings.TrimSpace(out))
}

// TestSlogRedisRepeats: a repeated line is held back within the interval,
// then written with how many were held.
func TestSlogRedisRepeats(t *testing.T) {
	var buf bytes.Buffer
	l := &slogRedis{log: slog.New(slog.NewTextHandler(&buf, nil)), every: 50 * time.Millisecond}
	for range 5 {
		l.Printf(context.Background(), "dial %s: refused", "a")
	}
	time.Sleep(60 * time.Millisecond)
	l.Printf(context.Background(), "dial %s: refused", "a")
	l.Printf(context.Background(), "another %d", 1)
	out := buf.String()
	if strings.Count(out, "\n") != 3 || !strings.Contains(out, "repeated=4") {
		t.Fatalf("want 3 lines, the second with repeated=4:\n%s", out)
	}
}

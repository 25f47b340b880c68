package redisflag

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

// TestConnectAuthFailureIsFinal: a wrong Redis password (or none where one
// is required) ends Connect at once with ErrAuth, as a wrong Kafka
// password ends the Kafka check, instead of retrying until the context
// ends with no sign but a log line; the right one connects.
func TestConnectAuthFailureIsFinal(t *testing.T) {
	addr := redistest.StartPasswordRedis(t, "right-password")
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

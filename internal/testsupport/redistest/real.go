package redistest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/testsupport/realpart"
)

// AddrEnv names the variable that points the tests at a real Redis other
// than DefaultAddr.
const AddrEnv = "MIMLSTREAM_TEST_REDIS_ADDR"

// DefaultAddr is where the tests look for a real Redis (make test and the
// CI start one there).
const DefaultAddr = "127.0.0.1:6379"

// Addr is the address of the real Redis the tests use: $MIMLSTREAM_TEST_REDIS_ADDR,
// else DefaultAddr.
func Addr() string {
	if a := os.Getenv(AddrEnv); a != "" {
		return a
	}
	return DefaultAddr
}

// Real returns the address of the real Redis after checking that it
// answers PING. When none answers the test stops (realpart.Missing): it
// fails under CI=true and is skipped elsewhere.
func Real(t testing.TB) string {
	t.Helper()
	addr := Addr()
	if err := ping(t.Context(), addr); err != nil {
		realpart.Missing(t, "no Redis answers at %s (%v); start redis-server or set %s", addr, err, AddrEnv)
	}
	return addr
}

func ping(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	return rdb.Ping(ctx).Err()
}

package featurestore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/embedded/redisserver"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// realRedisAddr is the Redis the tests use besides the embedded one;
// MIMLSTREAM_TEST_REDIS_ADDR overrides it.
func realRedisAddr() string {
	if a := os.Getenv("MIMLSTREAM_TEST_REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// forEachBackend runs f against the real Redis (skipped when none answers,
// unless CI=true) and against the embedded one, each time with a fresh
// random key prefix whose keys are deleted afterwards.
func forEachBackend(t *testing.T, f func(t *testing.T, rdb *redis.Client, prefix string)) {
	t.Helper()
	t.Run("real", func(t *testing.T) {
		addr := realRedisAddr()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		rdb, err := Connect(ctx, Options{Addr: addr})
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true but no Redis answers at %s: %v", addr, err)
			}
			t.Skipf("no Redis answers at %s (%v); start one or set MIMLSTREAM_TEST_REDIS_ADDR (with CI=true this fails)", addr, err)
		}
		prefix := uniquePrefix(t)
		t.Cleanup(func() {
			deleteMatching(t, rdb, "*"+prefix+"*")
			_ = rdb.Close()
		})
		f(t, rdb, prefix)
	})
	t.Run("embedded", func(t *testing.T) {
		f(t, embedded(t), uniquePrefix(t))
	})
}

func embedded(t *testing.T) *redis.Client {
	t.Helper()
	addr, stop, err := redisserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() {
		_ = rdb.Close()
		stop()
	})
	return rdb
}

func uniquePrefix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "mimlstream-test:" + hex.EncodeToString(b)
}

func deleteMatching(t *testing.T, rdb *redis.Client, pattern string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, pattern, 100).Iterator()
	for iter.Next(ctx) {
		if err := rdb.Del(ctx, iter.Val()).Err(); err != nil {
			t.Errorf("cleanup: del %s: %v", iter.Val(), err)
		}
	}
	if err := iter.Err(); err != nil {
		t.Errorf("cleanup: scan %s: %v", pattern, err)
	}
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// closedAddr returns a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// fixtureModel is the smallest models.Model whose envelope the registry
// can store; the registry never runs it.
type fixtureModel struct {
	meta  models.Meta
	state string
}

func (m fixtureModel) Meta() models.Meta { return m.meta }
func (m fixtureModel) Annotate(context.Context, *mil.Bag, models.Mode) (models.Annotation, error) {
	return models.Annotation{}, errors.New("fixture model does not annotate")
}
func (m fixtureModel) MarshalState() ([]byte, error) { return json.Marshal(m.state) }

// blobOf encodes a fixture model envelope.
func blobOf(t *testing.T, kind string, dim int, classes []string, state string) []byte {
	t.Helper()
	b, err := models.Encode(fixtureModel{meta: models.Meta{Kind: kind, Dim: dim, Classes: classes}, state: state})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

package featurecache

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

// backendSuite is every test that redistest.ForEachBackend runs;
// TestRedisCluster runs them all once more on a three-node Redis Cluster.
func backendSuite() []redistest.Case {
	return []redistest.Case{
		{Name: "CacheRoundTrip", F: testCacheRoundTrip},
		{Name: "CacheTTL", F: testCacheTTL},
		{Name: "CacheLRUAgainstReference", F: testCacheLRUAgainstReference},
		{Name: "CacheBoundConcurrent", F: testCacheBoundConcurrent},
		{Name: "CacheCorruptValueRefused", F: testCacheCorruptValueRefused},
		{Name: "CacheBytesAgainstReference", F: testCacheBytesAgainstReference},
		{Name: "MediaRoundTrip", F: testMediaRoundTrip},
	}
}

// TestRedisCluster runs every backend test on a real three-node Redis
// Cluster started on loopback: the cache's scripts must work when keys
// are spread over nodes, which the hash tag in every key allows.
func TestRedisCluster(t *testing.T) {
	redistest.OnCluster(t, backendSuite(), func(prefix string) string { return KeyBase(prefix, "") }, dialCluster)
}

func dialCluster(ctx context.Context, addrs []string) (redis.UniversalClient, error) {
	return redisflag.Dial(ctx, redisflag.Options{Addr: strings.Join(addrs, ",")})
}

// TestRedisDown: every operation against an unreachable Redis returns an
// error within its context, not a miss (which would featurize again and
// again without a word) nor a hang.
func TestRedisDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := New(rdb, "down", time.Minute, 10)
	for name, op := range map[string]func(context.Context) error{
		"Get":    func(ctx context.Context) error { _, _, err := c.Get(ctx, "k"); return err },
		"Put":    func(ctx context.Context) error { return c.Put(ctx, "k", []float64{1}) },
		"GetRaw": func(ctx context.Context) error { _, _, err := c.GetRaw(ctx, "k"); return err },
		"PutRaw": func(ctx context.Context) error { return c.PutRaw(ctx, "k", []byte("v")) },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := op(ctx); err == nil {
			t.Errorf("%s against a closed port: no error", name)
		}
		cancel()
	}
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

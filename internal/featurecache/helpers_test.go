package featurecache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/embedded/redisserver"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

// backendTest is a test body run against one Redis backend, with a fresh
// key prefix.
type backendTest func(t *testing.T, rdb redis.UniversalClient, prefix string)

// backendSuite is every test that forEachBackend runs; TestRedisCluster
// runs them all once more on a three-node Redis Cluster.
func backendSuite() []struct {
	name string
	f    backendTest
} {
	return []struct {
		name string
		f    backendTest
	}{
		{"CacheRoundTrip", testCacheRoundTrip},
		{"CacheTTL", testCacheTTL},
		{"CacheLRUAgainstReference", testCacheLRUAgainstReference},
		{"CacheBoundConcurrent", testCacheBoundConcurrent},
		{"CacheCorruptValueRefused", testCacheCorruptValueRefused},
		{"CacheBytesAgainstReference", testCacheBytesAgainstReference},
		{"MediaRoundTrip", testMediaRoundTrip},
	}
}

// forEachBackend runs f against the real Redis (redistest.Real: skipped
// when none answers, failed under CI=true) and against the embedded one,
// each time with a fresh random key prefix whose keys are deleted
// afterwards. The Redis Cluster run of the same bodies is
// TestRedisCluster.
func forEachBackend(t *testing.T, f backendTest) {
	t.Helper()
	t.Run("real", func(t *testing.T) {
		addr := redistest.Real(t)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		rdb, err := redisflag.Dial(ctx, redisflag.Options{Addr: addr})
		if err != nil {
			t.Fatalf("Redis at %s answered PING but Dial failed: %v", addr, err)
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

// TestRedisCluster runs every backend test on a real three-node Redis
// Cluster started on loopback (skipped when redis-server is not
// installed): the cache's scripts must work when keys are spread over
// nodes, which the hash tag in every key allows. Each test has its own
// prefix.
func TestRedisCluster(t *testing.T) {
	addrs := redistest.StartCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rdb, err := redisflag.Dial(ctx, redisflag.Options{Addr: strings.Join(addrs, ",")})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	nodes := map[string]bool{}
	for _, tc := range backendSuite() {
		prefix := uniquePrefix(t)
		node, err := rdb.(*redis.ClusterClient).MasterForKey(ctx, KeyBase(prefix, ""))
		if err != nil {
			t.Fatal(err)
		}
		nodes[node.Options().Addr] = true
		t.Run(tc.name, func(t *testing.T) { tc.f(t, rdb, prefix) })
	}
	t.Logf("%d tests on %d cluster nodes", len(backendSuite()), len(nodes))
	if len(nodes) < 2 {
		t.Errorf("every test landed on one node of the cluster; the test proves little")
	}
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

func embedded(t *testing.T) redis.UniversalClient {
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

func deleteMatching(t *testing.T, rdb redis.UniversalClient, pattern string) {
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

func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/embedded/redisserver"
)

// Body is a test body run against one Redis backend, with a key prefix of
// its own.
type Body func(t *testing.T, rdb redis.UniversalClient, prefix string)

// Case is a named Body, one entry of a package's backend suite.
type Case struct {
	Name string
	F    Body
}

// ForEachBackend runs f against the real Redis (Real: failed under
// CI=true when none answers, skipped elsewhere) and against the embedded
// one, each time with a fresh prefix whose keys are deleted afterwards.
func ForEachBackend(t *testing.T, f Body) {
	t.Helper()
	t.Run("real", func(t *testing.T) {
		addr := Real(t)
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		prefix := Prefix(t)
		t.Cleanup(func() {
			DeleteMatching(t, rdb, "*"+prefix+"*")
			_ = rdb.Close()
		})
		f(t, rdb, prefix)
	})
	t.Run("embedded", func(t *testing.T) {
		f(t, Embedded(t), Prefix(t))
	})
}

// Dialer connects to the Redis Cluster at addrs the way the package under
// test does in production (through its flags' dial, say).
type Dialer func(ctx context.Context, addrs []string) (redis.UniversalClient, error)

// OnCluster runs every case of suite once more on a real three-node Redis
// Cluster (StartCluster), each with its own prefix, through a client made
// by dial, which must be a cluster client. keyOf names a key the package
// writes under a prefix: the test fails when every prefix lands on one
// node, since the run would then prove nothing about keys spread over
// nodes.
func OnCluster(t *testing.T, suite []Case, keyOf func(prefix string) string, dial Dialer) {
	t.Helper()
	addrs := StartCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rdb, err := dial(ctx, addrs)
	if err != nil {
		t.Fatalf("cluster at %s: %v", strings.Join(addrs, ","), err)
	}
	defer rdb.Close()
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("dial with %d addresses made a %T, want a cluster client", len(addrs), rdb)
	}
	nodes := map[string]bool{}
	for _, tc := range suite {
		prefix := Prefix(t)
		node, err := cc.MasterForKey(ctx, keyOf(prefix))
		if err != nil {
			t.Fatal(err)
		}
		nodes[node.Options().Addr] = true
		t.Run(tc.Name, func(t *testing.T) { tc.F(t, rdb, prefix) })
	}
	t.Logf("%d tests on %d cluster nodes", len(suite), len(nodes))
	if len(nodes) < 2 {
		t.Errorf("every test landed on one node of the cluster; the test proves little")
	}
}

// Embedded starts the embedded Redis for the test and returns a client
// to it; both stop when the test ends.
func Embedded(t *testing.T) redis.UniversalClient {
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

// Prefix returns a random key prefix, so that tests sharing one Redis
// never see each other's keys.
func Prefix(t testing.TB) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "mimlstream-test:" + hex.EncodeToString(b)
}

// DeleteMatching deletes every key matching pattern (a test's clean-up).
func DeleteMatching(t testing.TB, rdb redis.UniversalClient, pattern string) {
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

package featurestore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/embedded/redisserver"
	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
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
		{"PutGet", testPutGet},
		{"GetUnknown", testGetUnknown},
		{"CorruptionRefused", testCorruptionRefused},
		{"PutNeverOverwrites", testPutNeverOverwrites},
		{"PromoteRollbackAgainstReference", testPromoteRollbackAgainstReference},
		{"ConcurrentPromote", testConcurrentPromote},
		{"List", testList},
		{"Prune", testPrune},
		{"PruneConcurrentWithPromote", testPruneConcurrentWithPromote},
		{"Signing", testSigning},
		{"IDsSurviveReset", testIDsSurviveReset},
		{"PromoteGuard", testPromoteGuard},
		{"PromoteIfCurrent", testPromoteIfCurrent},
	}
}

// forEachBackend runs f against the real Redis (redistest.Real: skipped
// when none answers, failed under CI=true) and against the embedded one, each time with a fresh
// random key prefix whose keys are deleted afterwards. The Redis Cluster
// run of the same bodies is TestRedisCluster.
func forEachBackend(t *testing.T, f backendTest) {
	t.Helper()
	t.Run("real", func(t *testing.T) {
		addr := redistest.Real(t)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		rdb, err := redisflag.Dial(ctx, redisflag.Options{Addr: addr})
		if err != nil {
			t.Fatalf("Redis at %s answered PING but Connect failed: %v", addr, err)
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
// installed): the registry's transactions, scripts and pub/sub must work
// when keys are spread over nodes, which the
// hash tag in every key allows. The cluster is started once and shared;
// each test has its own prefix.
func TestRedisCluster(t *testing.T) {
	addrs := redistest.StartCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rdb, err := redisflag.Dial(ctx, redisflag.Options{Addr: strings.Join(addrs, ",")})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if _, ok := rdb.(*redis.ClusterClient); !ok {
		t.Fatalf("Connect with %d addresses made a %T, want a cluster client", len(addrs), rdb)
	}
	// The prefixes of the tests land in different slots, so the suite
	// uses more than one node.
	nodes := map[string]bool{}
	for _, tc := range backendSuite() {
		prefix := uniquePrefix(t)
		node, err := rdb.(*redis.ClusterClient).MasterForKey(ctx, featurecache.KeyBase(prefix, ""))
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

// newClientLike opens a second client to the same Redis (or cluster) as
// rdb, with its own connection pool, as another process would.
func newClientLike(t *testing.T, rdb redis.UniversalClient) redis.UniversalClient {
	t.Helper()
	switch c := rdb.(type) {
	case *redis.Client:
		return redis.NewClient(&redis.Options{Addr: c.Options().Addr, DB: c.Options().DB})
	case *redis.ClusterClient:
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Options().Addrs})
	}
	t.Fatalf("unexpected client %T", rdb)
	return nil
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

package featurestore

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

// backendSuite is every test that redistest.ForEachBackend runs;
// TestRedisCluster runs them all once more on a three-node Redis Cluster.
func backendSuite() []redistest.Case {
	return []redistest.Case{
		{Name: "PutGet", F: testPutGet},
		{Name: "GetUnknown", F: testGetUnknown},
		{Name: "CorruptionRefused", F: testCorruptionRefused},
		{Name: "PutNeverOverwrites", F: testPutNeverOverwrites},
		{Name: "PromoteRollbackAgainstReference", F: testPromoteRollbackAgainstReference},
		{Name: "ConcurrentPromote", F: testConcurrentPromote},
		{Name: "List", F: testList},
		{Name: "Prune", F: testPrune},
		{Name: "PruneConcurrentWithPromote", F: testPruneConcurrentWithPromote},
		{Name: "Signing", F: testSigning},
		{Name: "IDsSurviveReset", F: testIDsSurviveReset},
		{Name: "PromoteGuard", F: testPromoteGuard},
		{Name: "PromoteIfCurrent", F: testPromoteIfCurrent},
	}
}

// TestRedisCluster runs every backend test on a real three-node Redis
// Cluster started on loopback: the registry's transactions, scripts and
// pub/sub must work when keys are spread over nodes, which the hash tag
// in every key allows.
func TestRedisCluster(t *testing.T) {
	redistest.OnCluster(t, backendSuite(), func(prefix string) string { return featurecache.KeyBase(prefix, "") }, dialCluster)
}

func dialCluster(ctx context.Context, addrs []string) (redis.UniversalClient, error) {
	return redisflag.Dial(ctx, redisflag.Options{Addr: strings.Join(addrs, ",")})
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

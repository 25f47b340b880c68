package annotate

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestFeatureCacheOnItsOwnRedis: with --cache-redis the feature cache's
// keys go to that Redis and none to the registry's, so a full cache can
// never refuse the registry's writes; without it they share one.
func TestFeatureCacheOnItsOwnRedis(t *testing.T) {
	topics := wire.DefaultTopics()
	brokers := streamtest.StartBroker(t, 1, topics.All()...)
	regAddr, regRdb, _ := streamtest.StartRedis(t)
	cacheAddr, cacheRdb, _ := streamtest.StartRedis(t)
	ds := streamtest.SmallDataset(10)
	streamtest.PublishModel(t, featurestore.NewRegistry(regRdb, "mimlstream:models"), ds, nil)
	kinds := models.NewRegistry(streamtest.CentroidKind())
	cfg := DefaultConfig()
	cfg.Kafka.Brokers, cfg.Redis.Addr, cfg.CacheRedis.Addr, cfg.Listen = brokers, regAddr, cacheAddr, "127.0.0.1:0"
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := New(ctx, service.Env{Stdout: &out, Stderr: &out}, kinds, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	pub, err := ingest.NewPublisher(ingest.PublisherConfig{Brokers: brokers, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if _, err := pub.PublishDataset(ctx, ds, ds.Bags); err != nil {
		t.Fatal(err)
	}
	count := func(rdb redis.UniversalClient) int {
		keys, err := rdb.Keys(ctx, "{mimlstream:features}:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		return len(keys)
	}
	streamtest.WaitFor(t, 20*time.Second, "cached features in the cache's Redis", func() bool { return count(cacheRdb) > 0 })
	inCache, inRegistry := count(cacheRdb), count(regRdb)
	t.Logf("--cache-redis: %d cache keys in the cache's Redis, %d in the registry's", inCache, inRegistry)
	if inRegistry != 0 {
		t.Errorf("%d cache keys in the registry's Redis, want none", inRegistry)
	}
	cancel()
	if err := <-done; err != nil && !strings.Contains(err.Error(), "context canceled") {
		t.Fatal(err)
	}
}

package stream

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/streamtest"
)

// failingCache is a feature cache whose Redis is down.
type failingCache struct{ calls int }

func (f *failingCache) Get(context.Context, string) ([]float64, bool, error) {
	f.calls++
	return nil, false, errors.New("connection refused")
}

func (f *failingCache) Put(context.Context, string, []float64) error {
	f.calls++
	return errors.New("connection refused")
}

// TestCachedMapperMatchesDirectAnnotation checks that annotating through
// the feature cache (cold, warm, or with Redis down) gives exactly what the
// model gives without it, and that the cache is used.
func TestCachedMapperMatchesDirectAnnotation(t *testing.T) {
	ds := smallDataset(12)
	m, err := streamtest.CentroidKind().Fit(context.Background(), ds, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fm := m.(FeatureMapper)
	addr, stop, err := featurestore.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	rdb, err := featurestore.Connect(context.Background(), featurestore.Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	redisCache := &cachedMapper{cache: featurestore.NewCache(rdb, "c", time.Minute, 1000), log: slog.New(slog.DiscardHandler), cooldown: time.Minute}
	fail := &failingCache{}
	downCache := &cachedMapper{cache: fail, log: slog.New(slog.DiscardHandler), cooldown: time.Minute}
	instances := 0
	for i := range ds.Bags {
		instances += len(ds.Bags[i].Instances)
	}
	for _, c := range []struct {
		name string
		cm   *cachedMapper
	}{{"cold", redisCache}, {"warm", redisCache}, {"redis down", downCache}, {"no cache", nil}} {
		for i := range ds.Bags {
			for _, mode := range []models.Mode{models.Inductive, models.Transductive} {
				want, err := m.Annotate(context.Background(), &ds.Bags[i], mode)
				if err != nil {
					t.Fatal(err)
				}
				got, err := c.cm.annotate(context.Background(), fm, &ds.Bags[i], mode)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: bag %s %s: cached annotation differs", c.name, ds.Bags[i].ID, mode)
				}
			}
		}
	}
	// Every instance missed once (cold), then every lookup hit. The toy
	// bags repeat instances, so the cold pass hits some already.
	if h, ms := redisCache.hits.Load(), redisCache.misses.Load(); ms == 0 || ms > int64(instances) || h+ms != int64(4*instances) {
		t.Errorf("hits %d misses %d over %d instance lookups", h, ms, 4*instances)
	}
	// With Redis down, one failed call trips the breaker for the cool-down.
	if fail.calls != 1 {
		t.Errorf("%d calls to a down cache, want 1 before the breaker opens", fail.calls)
	}
}

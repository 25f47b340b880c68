package quality_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/quality"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/telemetrytest"
)

// TestScoresFollowTheVersionNotItsName: live scores belong to a version's
// ID, not its name. After the registry is reset (Redis restarted empty of
// it), version names start again at v1: the new v1, another model, must
// not inherit the old v1's scored bags in the gauges, the totals the
// status page reads, or the shadow sums.
func TestScoresFollowTheVersionNotItsName(t *testing.T) {
	ctx := context.Background()
	_, rdb, _ := streamtest.StartRedis(t)
	reg := featurestore.NewRegistry(rdb, "q")
	store := quality.NewStore(rdb, "q", time.Minute, time.Hour)
	kinds := models.NewRegistry(streamtest.CentroidKind())
	ds := streamtest.SmallDataset(40)
	publish := func(iters string) (featurestore.VersionMeta, models.Model) {
		t.Helper()
		v := streamtest.PublishModel(t, reg, ds, models.Params{"iters": iters})
		blob, meta, err := reg.Get(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		m, err := kinds.Decode(blob)
		if err != nil {
			t.Fatal(err)
		}
		return meta, m
	}
	prov, _ := telemetrytest.NewProviders()
	tr, err := quality.New(quality.Config{Store: store, Registry: reg, Kinds: kinds, SampleRate: 1,
		Obs: service.Observability{Logger: streamtest.Logger(t), Meter: prov.Meter}})
	if err != nil {
		t.Fatal(err)
	}
	old, oldModel := publish("1")
	for i := range ds.Bags {
		tr.Observe(ctx, oldModel, old, &ds.Bags[i])
	}
	tr.Step(ctx)
	before := gauge(t, prov.MetricsHandler, "mimlstream_annotator_live_window_bags", "current")
	// The registry's keys go (a Redis restarted without them); the
	// scores' keys stay, as the annotators' unwritten sums would.
	keys, err := rdb.Keys(ctx, "{q}:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if len(k) < len("{q}:quality") || k[:len("{q}:quality")] != "{q}:quality" {
			if err := rdb.Del(ctx, k).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	fresh, _ := publish("2")
	tr.Step(ctx)
	after := gauge(t, prov.MetricsHandler, "mimlstream_annotator_live_window_bags", "current")
	total, err := store.Total(ctx, quality.KeyOf(fresh))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("old %s (id %s): %v bags scored; new %s (id %s) after the reset: gauge %v bags, total %d", old.Version, old.ID, before, fresh.Version, fresh.ID, after, total.Bags)
	if fresh.Version != old.Version || fresh.ID == old.ID {
		t.Fatalf("the reset did not reuse the name: %s/%s, %s/%s", old.Version, old.ID, fresh.Version, fresh.ID)
	}
	if before != float64(len(ds.Bags)) {
		t.Fatalf("old version's gauge %v bags, want %d", before, len(ds.Bags))
	}
	if !(after == 0 || math.IsNaN(after)) || total.Bags != 0 {
		t.Errorf("new %s inherited the old one's scores: gauge %v bags, total %d", fresh.Version, after, total.Bags)
	}
}

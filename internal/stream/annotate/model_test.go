package annotate

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
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
	ds := streamtest.SmallDataset(12)
	m, err := streamtest.CentroidKind().Fit(context.Background(), ds, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fm := m.(models.FeatureMapper)
	_, rdb, _ := streamtest.StartRedis(t)
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

// TestOutputSizeLimit checks that an annotation too large for the broker
// loses its instance scores first, and is dead-lettered as oversize only
// when even the labels do not fit.
func TestOutputSizeLimit(t *testing.T) {
	ds := streamtest.SmallDataset(3)
	m, err := streamtest.CentroidKind().Fit(context.Background(), ds, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blob, _ := models.Encode(m)
	kinds := models.NewRegistry(streamtest.CentroidKind())
	sm, err := decodeServed(kinds, blob, featurestore.VersionMeta{Version: "v1", Kind: streamtest.KindName, Classes: ds.Classes, Dim: 2})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(wire.NewBagMessage(&ds.Bags[0], "toy", 2, ds.Classes, false))
	msg := kafka.Message{Topic: "bags", Key: []byte(ds.Bags[0].ID), Value: raw}
	run := func(limit int) output {
		a, err := NewAnnotator(AnnotatorConfig{Brokers: []string{"unused:0"}, Topics: wire.DefaultTopics(), Kinds: kinds, Store: nil2store{}, MaxOutputBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		o := a.process(context.Background(), sm, msg)
		o.produce.End()
		o.span.End()
		return o
	}
	full := run(1 << 20)
	var ann wire.AnnotationMessage
	if err := json.Unmarshal(full.msg.Value, &ann); err != nil || ann.InstanceScores == nil {
		t.Fatalf("full annotation %s: %v", full.msg.Value, err)
	}
	ann.InstanceScores = nil
	labelsOnly, _ := json.Marshal(ann)
	cases := []struct {
		limit      int
		dead       bool
		withScores bool
	}{
		{len(full.msg.Value) + 100, false, true},
		// The timestamp and latency vary by a few bytes between runs; the
		// scores are hundreds of bytes.
		{len(full.msg.Value) - 30, false, false},
		{len(labelsOnly) - 50, true, false},
	}
	for _, c := range cases {
		o := run(c.limit)
		if o.dead != c.dead {
			t.Errorf("limit %d: dead %v, want %v", c.limit, o.dead, c.dead)
			continue
		}
		if c.dead {
			var d wire.DeadLetter
			if err := json.Unmarshal(o.msg.Value, &d); err != nil || d.Reason != wire.ReasonOversize || o.msg.Topic != wire.DefaultTopics().DeadLetter {
				t.Errorf("limit %d: dead letter %+v %v", c.limit, d, err)
			}
			continue
		}
		var got wire.AnnotationMessage
		if err := json.Unmarshal(o.msg.Value, &got); err != nil {
			t.Fatal(err)
		}
		if (got.InstanceScores != nil) != c.withScores || got.InstanceLabels == nil || len(o.msg.Value) > c.limit {
			t.Errorf("limit %d: %d bytes, scores %v, labels %v", c.limit, len(o.msg.Value), got.InstanceScores != nil, got.InstanceLabels)
		}
	}
}

// nil2store is a model store that is never asked (the test drives process
// directly).
type nil2store struct{}

func (nil2store) Current(context.Context) ([]byte, featurestore.VersionMeta, error) {
	return nil, featurestore.VersionMeta{}, errors.New("unused")
}

func (nil2store) Subscribe(context.Context) (<-chan string, error) { return nil, errors.New("unused") }

package annotate

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/baseline"
	"github.com/mimlstream/mimlstream/internal/models/misvm"
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
	redisCache := &cachedMapper{cache: featurecache.New(rdb, "c", time.Minute, 1000), log: slog.New(slog.DiscardHandler), cooldown: time.Minute}
	fail := &failingCache{}
	downCache := &cachedMapper{cache: fail, log: slog.New(slog.DiscardHandler), cooldown: time.Minute}
	instances := 0
	for i := range ds.Bags {
		instances += len(ds.Bags[i].Instances)
	}
	// Each bag sparse too: mapped dense, it must annotate as the dense
	// bag and share its cache entries.
	sparse := make([]mil.Bag, len(ds.Bags))
	for i, b := range ds.Bags {
		sparse[i] = mil.Bag{ID: b.ID, Labels: b.Labels, InstanceLabels: b.InstanceLabels}
		for _, x := range b.Instances {
			sparse[i].Sparse = append(sparse[i].Sparse, mil.SparseOf(x))
		}
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
				for _, b := range []*mil.Bag{&ds.Bags[i], &sparse[i]} {
					got, err := c.cm.annotate(context.Background(), fm, b, ds.Dim, mode)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s: bag %s %s (sparse %v): cached annotation differs", c.name, b.ID, mode, b.IsSparse())
					}
				}
			}
		}
	}
	// Every instance missed once (cold), then every lookup hit, the
	// sparse form of an instance included. The toy bags repeat
	// instances, so the cold pass hits some already.
	if h, ms := redisCache.hits.Load(), redisCache.misses.Load(); ms == 0 || ms > int64(instances) || h+ms != int64(8*instances) {
		t.Errorf("hits %d misses %d over %d instance lookups", h, ms, 8*instances)
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

// TestSparseBagAnnotatesAsDense is the differential test of the two
// encodings of a bag through the annotator: the same bag sent dense in
// JSON, sparse in JSON and sparse in the binary encoding gets the same
// annotation (scores bit for bit), from kinds without a sparse path (slr,
// which reads dense rows, and the centroid kind, which goes through the
// feature mapping) and from one with it (linear misvm, which annotates the
// sparse bag as it is). Catches
// a sparse bag decoded as empty, handed to a model that reads dense rows
// only, or mapped otherwise than its dense twin.
func TestSparseBagAnnotatesAsDense(t *testing.T) {
	ds := streamtest.SmallDataset(9)
	ds.Dim = 5 // three features always zero: the sparse form leaves them out
	for i := range ds.Bags {
		for k, x := range ds.Bags[i].Instances {
			ds.Bags[i].Instances[k] = []float64{x[0], 0, x[1], 0, 0}
		}
	}
	for _, kind := range []struct {
		kind   models.Kind
		params models.Params
	}{
		{streamtest.CentroidKind(), nil},
		{baseline.SLRKind(), models.Params{"iters": "50"}},
		{misvm.MISVMKind(), models.Params{"epochs": "5", "kernel": "linear", "restarts": "1"}},
	} {
		t.Run(kind.kind.Name, func(t *testing.T) {
			m, err := kind.kind.Fit(context.Background(), ds, models.FitOptions{Seed: 1, Params: kind.params})
			if err != nil {
				t.Fatal(err)
			}
			blob, err := models.Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			kinds := models.NewRegistry(kind.kind)
			sm, err := decodeServed(kinds, blob, featurestore.VersionMeta{Version: "v1", Kind: kind.kind.Name, Classes: ds.Classes, Dim: ds.Dim})
			if err != nil {
				t.Fatal(err)
			}
			a, err := NewAnnotator(AnnotatorConfig{Brokers: []string{"unused:0"}, Topics: wire.DefaultTopics(), Kinds: kinds, Store: nil2store{}})
			if err != nil {
				t.Fatal(err)
			}
			annotation := func(value []byte, ct string) wire.AnnotationMessage {
				t.Helper()
				msg := kafka.Message{Topic: "bags", Key: []byte("k"), Value: value, Headers: []kafka.Header{{Key: wire.HeaderContentType, Value: []byte(ct)}}}
				o := a.process(context.Background(), sm, msg)
				o.produce.End()
				o.span.End()
				if o.dead {
					t.Fatalf("dead-lettered: %s", o.msg.Value)
				}
				var ann wire.AnnotationMessage
				if err := json.Unmarshal(o.msg.Value, &ann); err != nil {
					t.Fatal(err)
				}
				ann.LatencyMS, ann.AnnotatedAt, ann.IngestedAt = 0, time.Time{}, nil
				return ann
			}
			for i := range ds.Bags {
				b := ds.Bags[i]
				if i%2 == 0 {
					b.Labels = nil // inductive
				}
				sp := mil.Bag{ID: b.ID, Labels: b.Labels}
				for _, x := range b.Instances {
					sp.Sparse = append(sp.Sparse, mil.SparseOf(x))
				}
				dense, _ := json.Marshal(wire.NewBagMessage(&b, "toy", ds.Dim, ds.Classes, false))
				sparseMsg := wire.NewBagMessage(&sp, "toy", ds.Dim, ds.Classes, false)
				sparseJSON, _ := json.Marshal(sparseMsg)
				if !strings.Contains(string(sparseJSON), `"sparse_instances"`) {
					t.Fatalf("not sparse: %s", sparseJSON)
				}
				want := annotation(dense, wire.ContentTypeJSON)
				if len(want.BagScores) != len(ds.Classes) {
					t.Fatalf("bag %s: annotation %+v", b.ID, want)
				}
				for name, got := range map[string]wire.AnnotationMessage{
					"sparse JSON":   annotation(sparseJSON, wire.ContentTypeJSON),
					"sparse binary": annotation(sparseMsg.AppendProto(nil), wire.ContentTypeProtobuf),
				} {
					if !sameAnnotation(got, want) {
						t.Errorf("bag %s, %s: %+v, dense %+v", b.ID, name, got, want)
					}
				}
			}
		})
	}
}

// sameAnnotation compares two annotations, scores by their bits.
func sameAnnotation(a, b wire.AnnotationMessage) bool {
	if !reflect.DeepEqual(a, b) {
		return false
	}
	bits := func(v []float64) []uint64 {
		out := make([]uint64, len(v))
		for i, f := range v {
			out[i] = math.Float64bits(f)
		}
		return out
	}
	for k := range a.InstanceScores {
		if !slices.Equal(bits(a.InstanceScores[k]), bits(b.InstanceScores[k])) {
			return false
		}
	}
	return slices.Equal(bits(a.BagScores), bits(b.BagScores))
}

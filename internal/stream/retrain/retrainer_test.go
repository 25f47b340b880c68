package retrain

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/telemetrytest"
)

// TestHeldOutIsStableAndProportional checks the held-out slice: the same
// bags whatever the order they are asked in (a refit after a restart holds
// out the same bags), about the fraction asked, and nested (a larger
// fraction only adds bags). The choice's values across releases are pinned
// in package sample.
func TestHeldOutIsStableAndProportional(t *testing.T) {
	n, in := 20000, 0
	first := make([]bool, n)
	for i := range n {
		first[i] = heldOut(fmt.Sprintf("bag-%d", i), 0.2)
		if first[i] {
			in++
		}
	}
	for i := n - 1; i >= 0; i-- {
		id := fmt.Sprintf("bag-%d", i)
		if heldOut(id, 0.2) != first[i] {
			t.Fatalf("bag %s: held-out choice changed when asked again in another order", id)
		}
		if first[i] && !heldOut(id, 0.3) {
			t.Fatalf("bag %s held out at 0.2 but not at 0.3", id)
		}
	}
	// Binomial(20000, 0.2) has sd 57; 5 sd is 283.
	if d := in - n/5; d < -283 || d > 283 {
		t.Errorf("held out %d of %d, want about %d", in, n, n/5)
	}
}

// harness is a broker, an in-process Redis with a model registry, and the
// topics of one test.
type harness struct {
	t       *testing.T
	brokers []string
	topics  wire.Topics
	reg     *featurestore.Registry
	kinds   *models.Registry
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	topics := wire.DefaultTopics()
	brokers := streamtest.StartBroker(t, 3, topics.All()...)
	_, rdb, _ := streamtest.StartRedis(t)
	return &harness{t: t, brokers: brokers, topics: topics, reg: featurestore.NewRegistry(rdb, "t"),
		kinds: models.NewRegistry(streamtest.CentroidKind())}
}

// publishModel fits the centroid model on ds and makes it current.
func (h *harness) publishModel(ds *mil.Dataset, params models.Params) string {
	h.t.Helper()
	return streamtest.PublishModel(h.t, h.reg, ds, params)
}

func (h *harness) retrainer(mutate func(*RetrainerConfig)) *Retrainer {
	h.t.Helper()
	cfg := RetrainerConfig{Brokers: h.brokers, Topic: h.topics.Train, Kinds: h.kinds, Kind: streamtest.KindName, Store: h.reg,
		Every: 30, MinBags: 20, HoldOut: 0.25, Margin: 0.01, Warm: true, Obs: service.Observability{Logger: streamtest.Logger(h.t)}}
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := NewRetrainer(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func TestRetrainerPromotesRebuildsAndRetries(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ds := streamtest.SmallDataset(90)
	pub, err := ingest.NewPublisher(ingest.PublisherConfig{Brokers: h.brokers, Topics: h.topics, LabelFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if _, err := pub.PublishDataset(ctx, ds, ds.Bags[:60]); err != nil {
		t.Fatal(err)
	}

	prov, _ := telemetrytest.NewProviders()
	r := h.retrainer(func(c *RetrainerConfig) { c.Obs.Meter = prov.Meter })
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	// The bags already on the topic are the window's rebuild: one refit
	// once it has caught up, the first model.
	streamtest.WaitFor(t, 20*time.Second, "first refit", func() bool { return len(r.Results()) >= 1 })
	if _, err := pub.PublishDataset(ctx, ds, ds.Bags[60:]); err != nil {
		t.Fatal(err)
	}
	streamtest.WaitFor(t, 20*time.Second, "two refits", func() bool { return len(r.Results()) >= 2 })
	res := r.Results()
	if !res[0].Promoted || res[0].Reason != "no current model" {
		t.Errorf("first refit %+v, want promoted as the first model", res[0])
	}
	// The toy data is separable: the second candidate is as good as the
	// first, so it is promoted (within the margin), warm-started from it.
	if !res[1].Promoted || res[1].Parent != res[0].Version || res[1].Current == nil {
		t.Errorf("second refit %+v, want promoted over %s", res[1], res[0].Version)
	}
	_, meta, err := h.reg.Current(ctx)
	if err != nil || meta.Version != res[1].Version {
		t.Fatalf("current %s, %v; want %s", meta.Version, err, res[1].Version)
	}
	if _, ok := meta.Metrics["heldout_"+measure.HammingLoss]; !ok || meta.TrainingWindow == "" {
		t.Errorf("version metadata lacks metrics or window: %+v", meta)
	}
	rr := httptest.NewRecorder()
	prov.MetricsHandler.ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	// Counters present from the start: no refit refused or failed, no bag
	// rejected for its dimension, yet these series exist at 0.
	for _, want := range []string{`promoted="true",result="promoted"} 2`, `promoted="false",result="kept"} 0`, `promoted="false",result="failed"} 0`, `reason="dimension"} 0`, "mimlstream_retrainer_window_bags", "mimlstream_retrainer_heldout_hamming_loss"} {
		if !strings.Contains(rr.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	rcancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// A restarted retrainer rebuilds its window from the topic.
	r2 := h.retrainer(func(c *RetrainerConfig) { c.Every = 1000 })
	rctx, rcancel = context.WithCancel(ctx)
	go func() { done <- r2.Run(rctx) }()
	streamtest.WaitFor(t, 10*time.Second, "window rebuilt", func() bool { return r2.Len() == 90 })
	rcancel()
	<-done
}

func TestRetrainerRefusesWorseCandidate(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	ds := streamtest.SmallDataset(60)
	good := h.publishModel(ds, nil)
	pub, err := ingest.NewPublisher(ingest.PublisherConfig{Brokers: h.brokers, Topics: h.topics, LabelFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	// Training bags whose labels are all wrong produce a worse candidate.
	bad := streamtest.SmallDataset(60)
	for i := range bad.Bags {
		var flipped []int
		for c := range 3 {
			if !bad.Bags[i].HasLabel(c) {
				flipped = append(flipped, c)
			}
		}
		bad.Bags[i].Labels = flipped
	}
	// The held-out slice keeps the true labels, so the current model
	// scores well on it and the candidate, fitted on flipped labels, badly.
	for i := range bad.Bags {
		if !heldOut(bad.Bags[i].ID, 0.25) {
			continue
		}
		bad.Bags[i].Labels = ds.Bags[i].Labels
	}
	if _, err := pub.PublishDataset(ctx, bad, bad.Bags); err != nil {
		t.Fatal(err)
	}
	r := h.retrainer(func(c *RetrainerConfig) { c.Warm = false; c.Params = models.Params{"iters": "0"} })
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = r.Run(rctx) }()
	streamtest.WaitFor(t, 10*time.Second, "window filled", func() bool { return r.Len() == 60 })
	res, err := r.Refit(rctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Promoted || res.Candidate[measure.HammingLoss] <= res.Current[measure.HammingLoss] {
		t.Fatalf("worse candidate promoted or not worse: %+v", res)
	}
	_, meta, _ := h.reg.Current(ctx)
	if meta.Version != good {
		t.Errorf("current is %s, want %s kept", meta.Version, good)
	}
}

func TestRetrainerWaitsOutRedisOutage(t *testing.T) {
	topics := wire.DefaultTopics()
	h := newHarness(t)
	addr, _, _ := streamtest.StartRedis(t)
	proxy, err := streamtest.NewProxy(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Down()
	rdb, err := redisflag.Dial(context.Background(), redisflag.Options{Addr: proxy.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	reg := featurestore.NewRegistry(rdb, "r")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ds := streamtest.SmallDataset(40)
	w := kafkaio.NewWriter(h.brokers, kafkasec.Conn{})
	defer w.Close()
	var msgs []kafka.Message
	for i := range ds.Bags {
		raw, _ := json.Marshal(wire.NewBagMessage(&ds.Bags[i], "toy", 2, ds.Classes, false))
		msgs = append(msgs, kafka.Message{Topic: topics.Train, Key: []byte(ds.Bags[i].ID), Value: raw})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	proxy.Down()
	r := h.retrainer(func(c *RetrainerConfig) { c.Store = reg; c.Every = 1000 })
	go func() { _ = r.Run(ctx) }()
	streamtest.WaitFor(t, 10*time.Second, "window filled", func() bool { return r.Len() == 40 })
	var res RefitResult
	done := streamtest.StaysBlocked(t, 700*time.Millisecond, "refit with Redis down", func() (err error) {
		res, err = r.Refit(ctx)
		return err
	})
	// Waiting out the outage is not being ready: /readyz says why.
	ready, msg := r.Ready()
	t.Logf("refit waiting for Redis: ready=%v %q", ready, msg)
	if ready || !strings.Contains(msg, "model registry unavailable") {
		t.Errorf("while a refit waits for Redis: ready=%v %q, want not ready naming the registry", ready, msg)
	}
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || !res.Promoted {
			t.Fatalf("after Redis came back: %+v %v", res, err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("refit did not complete after Redis came back")
	}
	if v, err := reg.Alias(ctx, featurestore.AliasCurrent); err != nil || v == "" {
		t.Fatalf("no current model after the outage: %v", err)
	}
	if ready, msg := r.Ready(); !ready {
		t.Errorf("after the outage: not ready: %s", msg)
	}
}

// survivors is the reference for the registry after a prune: the newest
// keep ids plus every protected one, in version order.
func survivors(ids []string, keep int, protected map[string]bool) []string {
	var out []string
	for i, v := range ids {
		if i >= len(ids)-keep || protected[v] {
			out = append(out, v)
		}
	}
	return out
}

// TestRetrainerPrunesAfterEveryRefit checks the registry stays bounded by
// KeepVersions after every refit, promoted or not (rejected versions do
// not pile up), never losing current, previous or the rollback history.
func TestRetrainerPrunesAfterEveryRefit(t *testing.T) {
	ds := streamtest.SmallDataset(60)
	cases := []struct {
		name string
		keep int
		// margins of the refits in turn: 1 always promotes, -1 never
		// promotes over a current model.
		margins []float64
		// stale unpromoted versions stored before the first refit.
		stale int
	}{
		{"keep 2", 2, []float64{1, 1, 1}, 4},
		{"keep 1", 1, []float64{1, -1, 1, 1}, 3},
		{"keep 0 keeps all", 0, []float64{1, 1}, 3},
		{"no promotion", 2, []float64{-1, -1}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			m, err := streamtest.CentroidKind().Fit(ctx, ds, models.FitOptions{Params: models.Params{"iters": "1"}})
			if err != nil {
				t.Fatal(err)
			}
			blob, _ := models.Encode(m)
			for range tc.stale {
				if _, err := h.reg.Put(ctx, blob, featurestore.VersionMeta{}); err != nil {
					t.Fatal(err)
				}
			}
			// The first stale version is current, as if an older
			// retrainer had promoted it.
			if err := h.reg.Promote(ctx, "v1"); err != nil {
				t.Fatal(err)
			}
			var history []string // formerly current, most recent first
			current := "v1"
			r := h.retrainer(func(c *RetrainerConfig) { c.KeepVersions = tc.keep })
			for i := range ds.Bags {
				raw, _ := json.Marshal(wire.NewBagMessage(&ds.Bags[i], "toy", ds.Dim, ds.Classes, false))
				r.add(ctx, kafka.Message{Key: []byte(ds.Bags[i].ID), Value: raw, Offset: int64(i)})
			}
			for i, margin := range tc.margins {
				before, err := h.reg.List(ctx)
				if err != nil {
					t.Fatal(err)
				}
				r.cfg.Margin = margin
				res, err := r.Refit(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if res.Promoted != (margin > 0) {
					t.Fatalf("refit %d: promoted %v (%s), want %v", i, res.Promoted, res.Reason, margin > 0)
				}
				ids := []string{}
				for _, vm := range before {
					ids = append(ids, vm.Version)
				}
				ids = append(ids, res.Version)
				want := ids
				var wantPruned []string
				if res.Promoted {
					history = append([]string{current}, history...)
					current = res.Version
				}
				// Pruned after every refit, kept or promoted: rejected
				// versions do not pile up until the next promotion.
				if tc.keep > 0 {
					protected := map[string]bool{current: true}
					for _, v := range history {
						protected[v] = true
					}
					want = survivors(ids, tc.keep, protected)
					for _, v := range ids {
						if !slices.Contains(want, v) {
							wantPruned = append(wantPruned, v)
						}
					}
				}
				if !slices.Equal(res.Pruned, wantPruned) {
					t.Errorf("refit %d: pruned %v, want %v", i, res.Pruned, wantPruned)
				}
				after, err := h.reg.List(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, vm := range after {
					got = append(got, vm.Version)
				}
				if !slices.Equal(got, want) {
					t.Errorf("refit %d: registry holds %v, want %v", i, got, want)
				}
			}
			// The whole rollback history survived: walking back
			// reaches every formerly current version in turn.
			for _, want := range history {
				got, err := h.reg.Rollback(ctx)
				if err != nil || got != want {
					t.Fatalf("rollback = %s, %v; want %s", got, err, want)
				}
				if _, _, err := h.reg.Current(ctx); err != nil {
					t.Fatalf("rolled back to %s: %v", want, err)
				}
			}
		})
	}
}

// TestTrainOffsetsWaitForDeadLetters feeds a good bag, a poison bag (no
// labels) and a good bag while the dead-letter writer is not yet running:
// the next offsets a refit would record stop at the poison bag until its
// dead letter is acknowledged, then cover all three. Catches training
// offsets that pass a dead letter still in flight: a crash then would
// lose it, as a restart does not dead-letter again below the offsets.
func TestTrainOffsetsWaitForDeadLetters(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	ds := streamtest.SmallDataset(2)
	r := h.retrainer(func(c *RetrainerConfig) { c.DeadLetterTopic = h.topics.DeadLetter })
	r.dead = kafkaio.NewProducer(kafkaio.ProducerConfig{Brokers: h.brokers})
	defer r.dead.Close()
	r.deadQ = make(chan deadJob, 4)
	encode := func(b mil.Bag) []byte {
		raw, err := json.Marshal(wire.NewBagMessage(&b, "toy", ds.Dim, ds.Classes, false))
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	unlabeled := ds.Bags[1]
	unlabeled.ID, unlabeled.Labels = "poison", nil
	for i, raw := range [][]byte{encode(ds.Bags[0]), encode(unlabeled), encode(ds.Bags[1])} {
		r.add(ctx, kafka.Message{Topic: h.topics.Train, Partition: 0, Offset: int64(i), Value: raw})
	}
	if got := r.nextOffsets(); got[0] != 1 {
		t.Fatalf("next offsets %v with the dead letter of offset 1 in flight, want 0:1", got)
	}
	done := make(chan struct{})
	go func() { r.deadLetterWriter(ctx); close(done) }()
	close(r.deadQ)
	<-done
	if got := r.nextOffsets(); got[0] != 3 {
		t.Fatalf("next offsets %v after the dead letter was acknowledged, want 0:3", got)
	}
	if r.Len() != 2 {
		t.Errorf("window holds %d bags, want the 2 good ones", r.Len())
	}
}

// TestRetrainerFitsSparseBags: training bags that arrive sparse (in
// either wire format) enter the window sparse, and a kind without a
// sparse path (the centroid kind) is fitted and evaluated on them
// densified: the refit succeeds and the model it promotes is the one the
// same window sent dense gives (the same held-out metrics). Catches sparse
// bags handed to a fit or an evaluation that reads dense rows only.
func TestRetrainerFitsSparseBags(t *testing.T) {
	ds := streamtest.SmallDataset(40)
	sp := &mil.Dataset{Name: ds.Name, Classes: ds.Classes, Dim: ds.Dim, Bags: make([]mil.Bag, len(ds.Bags))}
	for i, b := range ds.Bags {
		sp.Bags[i] = mil.Bag{ID: b.ID, Labels: b.Labels}
		for _, x := range b.Instances {
			sp.Bags[i].Sparse = append(sp.Bags[i].Sparse, mil.SparseOf(x))
		}
	}
	results := map[string]RefitResult{}
	for _, c := range []struct {
		name   string
		data   *mil.Dataset
		format wire.Format
	}{{"dense", ds, wire.FormatJSON}, {"sparse JSON", sp, wire.FormatJSON}, {"sparse binary", sp, wire.FormatProtobuf}} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pub, err := ingest.NewPublisher(ingest.PublisherConfig{Brokers: h.brokers, Topics: h.topics, LabelFraction: 1, Format: c.format})
			if err != nil {
				t.Fatal(err)
			}
			defer pub.Close()
			if rej, err := pub.PublishDataset(ctx, c.data, c.data.Bags); err != nil || len(rej) != 0 {
				t.Fatalf("publish: %v %+v", err, rej)
			}
			r := h.retrainer(func(c *RetrainerConfig) { c.Every = 1000 })
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			streamtest.WaitFor(t, 20*time.Second, "window filled", func() bool { return r.Len() == 40 })
			res, err := r.Refit(ctx)
			if err != nil || !res.Promoted {
				t.Fatalf("refit: %+v %v", res, err)
			}
			results[c.name] = res
			cancel()
			<-done
		})
	}
	want := results["dense"].Candidate
	for _, name := range []string{"sparse JSON", "sparse binary"} {
		if got := results[name]; got.TrainBags != results["dense"].TrainBags || !reflect.DeepEqual(got.Candidate, want) {
			t.Errorf("%s: %d train bags, held-out %v; dense: %d, %v", name, got.TrainBags, got.Candidate, results["dense"].TrainBags, want)
		}
	}
}

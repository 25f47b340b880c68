package retrain

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/orlr"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/telemetry"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/telemetrytest"
)

// TestHugeFeatureNeverStopsOrlrRefits reproduces the adversary's bag: one
// labeled training bag with a finite feature of 1e308 among good ones made
// every warm-started orlr refit fail ("bag label has zero probability
// under the model"). It is dead-lettered at the retrainer's door
// (non_finite) and the refit succeeds.
func TestHugeFeatureNeverStopsOrlrRefits(t *testing.T) {
	h := newHarness(t)
	h.kinds = models.NewRegistry(streamtest.CentroidKind(), orlr.Kind())
	ctx := context.Background()
	ds, err := dataset.Load("../../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		t.Fatal(err)
	}
	ds.Bags = ds.Bags[:200]
	params := models.Params{"iters": "3"}
	first := h.retrainer(func(c *RetrainerConfig) { c.Kind = "orlr"; c.Params = params })
	fill(t, first, ds)
	if res, err := first.Refit(ctx); err != nil || !res.Promoted {
		t.Fatalf("first orlr refit: %+v %v", res, err)
	}
	// Warm-started from the first model, as every refit after it is.
	r := h.retrainer(func(c *RetrainerConfig) { c.Kind = "orlr"; c.Params = params; c.Margin = 1 })
	fill(t, r, ds)
	huge := ds.Bags[3]
	huge.Instances = slices.Clone(huge.Instances)
	huge.Instances[0] = slices.Clone(huge.Instances[0])
	huge.Instances[0][0] = 1e308
	// In the training slice: a held-out bag is only annotated.
	for i := 0; huge.ID == ds.Bags[3].ID || heldOut(huge.ID, 0.25); i++ {
		huge.ID = fmt.Sprintf("huge-%d", i)
	}
	raw, err := json.Marshal(wire.NewBagMessage(&huge, "toy", ds.Dim, ds.Classes, false))
	if err != nil {
		t.Fatal(err)
	}
	r.add(ctx, kafka.Message{Key: []byte(huge.ID), Value: raw, Offset: int64(len(ds.Bags))})
	res, err := r.Refit(ctx)
	t.Logf("window %d bags (%d sent); refit: promoted=%v train=%d err=%v", r.Len(), len(ds.Bags)+1, res.Promoted, res.TrainBags, err)
	if err != nil || r.Len() != len(ds.Bags) {
		t.Errorf("refit with a 1e308 bag sent: %v, window %d bags; want the bag kept out and the refit to succeed", err, r.Len())
	}
}

// fragileKind is the centroid kind whose fit fails on any training bag
// holding a feature above 1e6, and on more than *maxBags bags (0: no
// limit): a model that cannot take a bag every door admits, or that fails
// for want of any single culprit.
func fragileKind(maxBags *int) models.Kind {
	k := streamtest.CentroidKind()
	fit := k.Fit
	k.Fit = func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
		if *maxBags > 0 && len(train.Bags) > *maxBags {
			return nil, fmt.Errorf("fragile: %d bags, more than %d", len(train.Bags), *maxBags)
		}
		for _, b := range train.Bags {
			for _, x := range b.Instances {
				for _, f := range x {
					if f > 1e6 {
						return nil, fmt.Errorf("fragile: feature %g: E-step underflow", f)
					}
				}
			}
		}
		return fit(ctx, train, opt)
	}
	return k
}

// TestRefitIsolatesABreakingBag: a training bag that every door admits but
// that makes the fit fail is found, dead-lettered (stage retrain, reason
// bad_input, with the fit's error) and left out of the window, and the
// refit succeeds without it; a refit that fails for want of a single
// culprit is counted (refits_total{result="failed"}), shown on /refits
// with its error and on /readyz, until a refit succeeds.
func TestRefitIsolatesABreakingBag(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	maxBags := 0
	h.kinds = models.NewRegistry(fragileKind(&maxBags))
	ds := streamtest.SmallDataset(60)
	bad := ds.Bags[7]
	bad.ID = "breaks-the-fit"
	bad.Instances = [][]float64{{5e7, 0}, {0, 1}}
	bags := append(append(append([]mil.Bag{}, ds.Bags[:30]...), bad), ds.Bags[30:]...)
	h.writeBags(ctx, ds, bags)
	prov, _ := telemetrytest.NewProviders()
	r := h.retrainer(func(c *RetrainerConfig) {
		c.DeadLetterTopic = h.topics.DeadLetter
		c.Every = 1000
		c.Obs.Meter = prov.Meter
	})
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	// The first refit, once the window is rebuilt (no model yet).
	streamtest.WaitFor(t, 20*time.Second, "first refit", func() bool { return len(r.Results()) == 1 })
	res := r.Results()[0]
	t.Logf("refit over %d bags, one breaking the fit: promoted=%v train=%d held-out=%d isolated=%v window=%d error=%q",
		len(bags), res.Promoted, res.TrainBags, res.HeldOutBags, res.Isolated, r.Len(), res.Error)
	if res.Error != "" || !res.Promoted || res.TrainBags+res.HeldOutBags != len(ds.Bags) || r.Len() != len(ds.Bags) ||
		len(res.Isolated) != 1 || res.Isolated[0] != bad.ID {
		t.Fatalf("refit: %+v; want it to succeed on the %d other bags, %s isolated and out of the window", res, len(ds.Bags), bad.ID)
	}
	dead := h.deadLetters(ctx, 1, 10*time.Second)
	if len(dead) != 1 || dead[0].Key != bad.ID || dead[0].Stage != wire.StageRetrain || dead[0].Reason != wire.ReasonBadInput ||
		!strings.Contains(dead[0].Error, "E-step underflow") {
		t.Fatalf("dead letters %+v, want one for %s (stage retrain, bad_input, the fit's error)", dead, bad.ID)
	}
	t.Logf("dead letter: key %s stage %s reason %s: %s", dead[0].Key, dead[0].Stage, dead[0].Reason, dead[0].Error)

	// No single culprit: the refit fails, and says so everywhere.
	maxBags = 30
	if _, err := r.Refit(ctx); err == nil {
		t.Fatal("refit of more bags than the kind takes succeeded")
	}
	results := r.Results()
	last := results[len(results)-1]
	ready, msg := r.Ready() // what /readyz serves
	m := metricsText(prov)
	t.Logf("failed refit: /refits last %+v; /readyz ready=%v %q; %s", last, ready, msg, grep(m, `result="failed"`))
	if last.Error == "" || last.Promoted || !strings.Contains(last.Error, "more than 30") {
		t.Errorf("/refits' last entry %+v, want the failure with its error", last)
	}
	if ready || !strings.Contains(msg, "refit failed") {
		t.Errorf("/readyz ready=%v %q, want not ready, naming the failed refit", ready, msg)
	}
	if !strings.Contains(m, `mimlstream_retrainer_refits_total{otel_scope_name="github.com/mimlstream/mimlstream/internal/stream",otel_scope_schema_url="",otel_scope_version="",promoted="false",result="failed"} 1`) {
		t.Errorf("refits_total{result=\"failed\"} not 1:\n%s", grep(m, "refits_total"))
	}
	maxBags = 0
	if _, err := r.Refit(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, msg := r.Ready(); !ok {
		t.Errorf("after a refit succeeded again: not ready: %s", msg)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// A restart rebuilds the window from the topic: the isolated bag,
	// replayed, stays out (the current version names it), without a
	// second dead letter, and the restart refits nothing.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	r2 := h.retrainer(func(c *RetrainerConfig) { c.DeadLetterTopic = h.topics.DeadLetter; c.Every = 1000 })
	done2 := make(chan error, 1)
	go func() { done2 <- r2.Run(ctx2) }()
	streamtest.WaitFor(t, 20*time.Second, "rebuilt", func() bool { ok, _ := r2.Ready(); return ok })
	dead = h.deadLetters(ctx2, 2, 3*time.Second)
	t.Logf("after a restart: window %d bags of %d on the topic, %d refits, %d dead letters", r2.Len(), len(bags), len(r2.Results()), len(dead))
	if r2.Len() != len(ds.Bags) || len(dead) != 1 || len(r2.Results()) != 0 {
		t.Errorf("after a restart: window %d bags, %d dead letters, %d refits; want %d, 1, 0", r2.Len(), len(dead), len(r2.Results()), len(ds.Bags))
	}
	cancel2()
	if err := <-done2; err != nil {
		t.Fatal(err)
	}
}

func metricsText(prov *telemetry.Providers) string {
	rr := httptest.NewRecorder()
	prov.MetricsHandler.ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	return rr.Body.String()
}

func grep(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, "\n")
}

// TestTrainingDeadLettersKeyedByBagID: the retrainer's dead letters are
// keyed by the bag id whatever the training message's key (none here), and
// a message too broken to name its bag by where it lies.
func TestTrainingDeadLettersKeyedByBagID(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.publishModel(streamtest.SmallDataset(30), nil) // the target of dimension and vocabulary
	keys, raws, want := poison()
	h.writeTrain(ctx, make([]string, len(keys)), raws) // keyless
	r := h.retrainer(func(c *RetrainerConfig) {
		c.DeadLetterTopic = h.topics.DeadLetter
		c.Params = models.Params{"max_labels": "2"}
	})
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	tctx, tcancel := context.WithTimeout(ctx, 20*time.Second)
	defer tcancel()
	got := map[string]string{} // Kafka key -> reason
	err := kafkaio.Tail(tctx, h.brokers, kafkasec.Conn{}, h.topics.DeadLetter, func(m kafka.Message) error {
		var d wire.DeadLetter
		if err := json.Unmarshal(m.Value, &d); err != nil {
			return err
		}
		got[string(m.Key)] = string(d.Reason)
		if len(got) == len(want) {
			return kafkaio.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dead-letter keys of %d keyless training messages: %v", len(want), got)
	for _, id := range keys {
		if id == "p-json" {
			continue // malformed: names no bag
		}
		if got[id] != string(want[id]) {
			t.Errorf("no dead letter keyed %s (reason %s): %v", id, want[id], got)
		}
	}
	located := 0
	for k := range got {
		if strings.HasPrefix(k, h.topics.Train+"/") {
			located++
		}
	}
	if located != 1 {
		t.Errorf("%d dead letters keyed by location, want 1 (the malformed message): %v", located, got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

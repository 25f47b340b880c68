package quality_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/annotate"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/quality"
	"github.com/mimlstream/mimlstream/internal/stream/sample"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/telemetrytest"
)

// pipeline is a broker, an in-process Redis with a registry and a quality
// store, and an annotator with a quality tracker.
type pipeline struct {
	t       *testing.T
	brokers []string
	topics  wire.Topics
	reg     *featurestore.Registry
	store   *quality.Store
	kinds   *models.Registry
	tracker *quality.Tracker
	metrics http.Handler
	// interval is the tracker's (50 ms unless set before run).
	interval time.Duration
	annot    *annotate.Annotator
}

func newPipeline(t *testing.T) *pipeline {
	t.Helper()
	topics := wire.DefaultTopics()
	brokers := streamtest.StartBroker(t, 3, topics.All()...)
	_, rdb, _ := streamtest.StartRedis(t)
	return &pipeline{t: t, brokers: brokers, topics: topics, reg: featurestore.NewRegistry(rdb, "q"),
		store: quality.NewStore(rdb, "q", time.Minute, time.Hour), kinds: models.NewRegistry(streamtest.CentroidKind())}
}

// store fits the centroid model on ds and stores it (not promoted).
func (p *pipeline) put(ds *mil.Dataset, params models.Params) (string, models.Model) {
	p.t.Helper()
	m, err := streamtest.CentroidKind().Fit(context.Background(), ds, models.FitOptions{Params: params})
	if err != nil {
		p.t.Fatal(err)
	}
	blob, err := models.Encode(m)
	if err != nil {
		p.t.Fatal(err)
	}
	meta, err := p.reg.Put(context.Background(), blob, featurestore.VersionMeta{})
	if err != nil {
		p.t.Fatal(err)
	}
	return meta.Version, m
}

// key is the key of a version's scores (quality.KeyOf).
func (p *pipeline) key(version string) string {
	p.t.Helper()
	meta, err := p.reg.Meta(context.Background(), version)
	if err != nil {
		p.t.Fatal(err)
	}
	return quality.KeyOf(meta)
}

// run starts the tracker and the annotator until the test ends.
func (p *pipeline) run(rate float64, policy *quality.Policy) {
	p.t.Helper()
	prov, _ := telemetrytest.NewProviders()
	p.metrics = prov.MetricsHandler
	obs := service.Observability{Logger: streamtest.Logger(p.t), Meter: prov.Meter}
	if p.interval == 0 {
		p.interval = 50 * time.Millisecond
	}
	tr, err := quality.New(quality.Config{Store: p.store, Registry: p.reg, Kinds: p.kinds, SampleRate: rate,
		Interval: p.interval, Policy: policy, Obs: obs})
	if err != nil {
		p.t.Fatal(err)
	}
	p.tracker = tr
	a, err := annotate.NewAnnotator(annotate.AnnotatorConfig{Brokers: p.brokers, GroupID: "annotators", Topics: p.topics, Name: "a1",
		Kinds: p.kinds, Store: p.reg, PollInterval: 100 * time.Millisecond, SessionTimeout: 2 * time.Second, Quality: tr, Obs: obs})
	if err != nil {
		p.t.Fatal(err)
	}
	p.annot = a
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = tr.Run(ctx) }()
	go func() {
		defer wg.Done()
		if err := a.Run(ctx); err != nil {
			p.t.Errorf("annotator: %v", err)
		}
	}()
	p.t.Cleanup(func() { cancel(); wg.Wait() })
}

func (p *pipeline) publish(ds *mil.Dataset, labelFraction float64) *ingest.Publisher {
	p.t.Helper()
	pub, err := ingest.NewPublisher(ingest.PublisherConfig{Brokers: p.brokers, Topics: p.topics, LabelFraction: labelFraction, Seed: 7, WithInstanceLabels: true})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { pub.Close() })
	if rej, err := pub.PublishDataset(context.Background(), ds, ds.Bags); err != nil || len(rej) != 0 {
		p.t.Fatalf("publish: %v %v", rej, err)
	}
	return pub
}

// annotations reads the annotations topic until n distinct bags are seen
// and returns the model version of each.
func (p *pipeline) annotations(n int, timeout time.Duration) map[string]string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: p.brokers, GroupID: "test-reader", Topic: p.topics.Annotations, StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	out := map[string]string{}
	for len(out) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			p.t.Fatalf("%d of %d annotations within %v: %v", len(out), n, timeout, err)
		}
		var a wire.AnnotationMessage
		if err := json.Unmarshal(m.Value, &a); err != nil {
			p.t.Fatal(err)
		}
		out[a.BagID] = a.ModelVersion
	}
	return out
}

func loadMSCV2(t *testing.T) *mil.Dataset {
	t.Helper()
	ds, err := dataset.Load("../../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestLiveInstanceAccuracyEqualsOffline streams MSCV2 through an annotator
// with half of the bags keeping their bag labels and every bag carrying its
// instance labels as audit labels, scoring a sampled 60% of the labeled
// bags. The live figures the store reports for the served version must
// equal the offline measures of the same model on the same bags (labels
// hidden from the prediction). It catches scoring the transductive
// annotation (which sees the labels), scoring unlabeled or unsampled bags,
// losing or double-counting scores between the annotator and Redis, and
// measures that disagree with package measure.
func TestLiveInstanceAccuracyEqualsOffline(t *testing.T) {
	p := newPipeline(t)
	ds := loadMSCV2(t)
	version, m := p.put(ds, nil)
	if err := p.reg.Promote(context.Background(), version); err != nil {
		t.Fatal(err)
	}
	const rate = 0.6
	p.run(rate, nil)
	pub := p.publish(ds, 0.5)
	p.annotations(len(ds.Bags), time.Minute)

	acc := measure.NewAccumulator(len(ds.Classes))
	transductive := measure.NewAccumulator(len(ds.Classes))
	bags := 0
	for i := range ds.Bags {
		b := ds.Bags[i]
		if !pub.KeepLabels(b.ID) || sample.Unit("quality", b.ID) >= rate {
			continue
		}
		bags++
		hidden := b
		hidden.Labels = nil
		a, err := m.Annotate(context.Background(), &hidden, models.Inductive)
		if err != nil {
			t.Fatal(err)
		}
		if err := acc.Add(&b, measure.Prediction{InstanceLabels: a.InstanceLabels, BagLabels: a.BagLabels, BagScores: a.BagScores}); err != nil {
			t.Fatal(err)
		}
		tr, err := m.Annotate(context.Background(), &b, models.Transductive)
		if err != nil {
			t.Fatal(err)
		}
		if err := transductive.Add(&b, measure.Prediction{InstanceLabels: tr.InstanceLabels, BagLabels: tr.BagLabels, BagScores: tr.BagScores}); err != nil {
			t.Fatal(err)
		}
	}
	off := acc.Result()
	var live quality.Record
	streamtest.WaitFor(t, 10*time.Second, "live scores of every sampled labeled bag in Redis", func() bool {
		r, err := p.store.Total(context.Background(), p.key(version))
		live = r
		return err == nil && r.Bags >= int64(bags)
	})
	t.Logf("%s on %d of %d bags: live instance accuracy %.6f (%d/%d), offline %.6f over %d instances (transductive %.6f); Hamming loss live %.6f offline %.6f; average precision live %.6f offline %.6f",
		version, bags, len(ds.Bags), live.InstanceAccuracy(), live.Correct, live.Instances, off.InstanceAccuracy, off.Instances, transductive.Result().InstanceAccuracy,
		live.HammingLoss(), off.HammingLoss, live.AveragePrecision(), off.AveragePrecision)
	if bags < 100 || live.Bags != int64(bags) || live.Instances != int64(off.Instances) {
		t.Fatalf("live scores cover %d bags and %d instances, offline %d bags and %d instances", live.Bags, live.Instances, bags, off.Instances)
	}
	if live.InstanceAccuracy() != off.InstanceAccuracy {
		t.Errorf("live instance accuracy %v != offline %v", live.InstanceAccuracy(), off.InstanceAccuracy)
	}
	if math.Abs(live.HammingLoss()-off.HammingLoss) > 1e-9 || math.Abs(live.AveragePrecision()-off.AveragePrecision) > 1e-9 || live.Ranked != int64(off.Ranked) {
		t.Errorf("live Hamming loss %v, average precision %v (%d ranked); offline %v, %v (%d)",
			live.HammingLoss(), live.AveragePrecision(), live.Ranked, off.HammingLoss, off.AveragePrecision, off.Ranked)
	}
	if tr := transductive.Result().InstanceAccuracy; tr == off.InstanceAccuracy {
		t.Errorf("transductive and inductive accuracy coincide (%v): the test cannot tell them apart", tr)
	}
	// The rolling window and the series hold the same bags (one run, well
	// within the window).
	w, err := p.store.Window(context.Background(), p.key(version), time.Now(), 10*time.Minute)
	if err != nil || w.Bags != live.Bags || w.Correct != live.Correct {
		t.Errorf("window %+v (%v), total %+v", w, err, live)
	}
	// The gauges export the same figures, labeled by alias, not version.
	var got float64
	streamtest.WaitFor(t, 5*time.Second, "the instance accuracy gauge", func() bool {
		got = gauge(t, p.metrics, "mimlstream_annotator_live_instance_accuracy", "current")
		return got == live.InstanceAccuracy()
	})
	if n := gauge(t, p.metrics, "mimlstream_annotator_live_window_bags", "current"); n != float64(bags) {
		t.Errorf("window_bags gauge %v, want %d", n, bags)
	}
}

// gauge returns the value of metric{alias=...} on a /metrics page (NaN
// when absent).
func gauge(t *testing.T, h http.Handler, metric, alias string) float64 {
	t.Helper()
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.Lines(rr.Body.String()) {
		if !strings.HasPrefix(line, metric+"{") || !strings.Contains(line, `alias="`+alias+`"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	return math.NaN()
}

// shuffledLabels returns ds with every bag's label set replaced by that of
// another bag: a model fitted on it is deliberately worse.
func shuffledLabels(ds *mil.Dataset) *mil.Dataset {
	out := *ds
	out.Bags = append([]mil.Bag(nil), ds.Bags...)
	r := rand.New(rand.NewPCG(1, 2))
	perm := r.Perm(len(out.Bags))
	for i := range out.Bags {
		out.Bags[i].Labels = ds.Bags[perm[i]].Labels
		out.Bags[i].InstanceLabels = nil
	}
	return &out
}

// TestShadowCandidate runs a candidate in shadow beside current: a
// deliberately worse one (fitted on shuffled labels) is rejected and never
// annotates, a better one (current fitted on a tenth of the bags without
// refinement, the candidate on all of them) is promoted. It catches a judge
// that promotes regardless, that compares on different bags or too few,
// and shadow predictions leaking into the annotations.
func TestShadowCandidate(t *testing.T) {
	ds := loadMSCV2(t)
	policy := &quality.Policy{MinBags: 150, Margin: 0.005}
	t.Run("worse is rejected", func(t *testing.T) {
		p := newPipeline(t)
		cur, _ := p.put(ds, nil)
		if err := p.reg.Promote(context.Background(), cur); err != nil {
			t.Fatal(err)
		}
		cand, _ := p.put(shuffledLabels(ds), nil)
		if err := p.reg.SetCandidate(context.Background(), cand); err != nil {
			t.Fatal(err)
		}
		p.run(1, policy)
		streamtest.WaitFor(t, 5*time.Second, "candidate loaded in shadow", func() bool { return p.tracker.Shadow() == cand })
		p.publish(ds, 1)
		anns := p.annotations(len(ds.Bags), time.Minute)
		v := waitVerdict(t, p)
		t.Logf("verdict: promoted %v: %s", v.Promoted, v.Reason)
		if v.Promoted || v.Candidate != cand || v.Current != cur {
			t.Fatalf("verdict %+v, want %s rejected against %s", v, cand, cur)
		}
		if c, _ := p.reg.Alias(context.Background(), featurestore.AliasCurrent); c != cur {
			t.Errorf("current is %s after the rejection, want %s", c, cur)
		}
		if _, err := p.reg.Alias(context.Background(), featurestore.AliasCandidate); !errors.Is(err, featurestore.ErrNotFound) {
			t.Errorf("candidate alias still set after the rejection: %v", err)
		}
		for id, ver := range anns {
			if ver != cur {
				t.Fatalf("bag %s annotated by %s; only current %s annotates", id, ver, cur)
			}
		}
	})
	t.Run("better is promoted", func(t *testing.T) {
		p := newPipeline(t)
		few := *ds
		few.Bags = ds.Bags[:len(ds.Bags)/10]
		cur, _ := p.put(&few, models.Params{"iters": "0"})
		if err := p.reg.Promote(context.Background(), cur); err != nil {
			t.Fatal(err)
		}
		cand, _ := p.put(ds, nil)
		if err := p.reg.SetCandidate(context.Background(), cand); err != nil {
			t.Fatal(err)
		}
		p.run(1, policy)
		streamtest.WaitFor(t, 5*time.Second, "candidate loaded in shadow", func() bool { return p.tracker.Shadow() == cand })
		p.publish(ds, 1)
		v := waitVerdict(t, p)
		t.Logf("verdict: promoted %v: %s", v.Promoted, v.Reason)
		if !v.Promoted || v.Candidate != cand || v.Current != cur || v.Cand.Bags < policy.MinBags {
			t.Fatalf("verdict %+v, want %s promoted over %s on at least %d bags", v, cand, cur, policy.MinBags)
		}
		if c, _ := p.reg.Alias(context.Background(), featurestore.AliasCurrent); c != cand {
			t.Errorf("current is %s after the promotion, want %s", c, cand)
		}
	})
}

func waitVerdict(t *testing.T, p *pipeline) quality.Verdict {
	t.Helper()
	var vs []quality.Verdict
	streamtest.WaitFor(t, 30*time.Second, "a shadow verdict", func() bool {
		var err error
		vs, err = p.store.Verdicts(context.Background())
		return err == nil && len(vs) > 0
	})
	if len(vs) != 1 {
		t.Errorf("%d verdicts, want 1: %+v", len(vs), vs)
	}
	return vs[0]
}

// TestCandidateSetByHandTakenAtOnce: a candidate set by hand (mimlctl
// models candidate) is announced on the registry's candidate channel, so
// the tracker takes it into shadow at once rather than at its next round
// (a minute here), and /readyz names it.
func TestCandidateSetByHandTakenAtOnce(t *testing.T) {
	p := newPipeline(t)
	ds := streamtest.SmallDataset(20)
	v1, _ := p.put(ds, nil)
	if err := p.reg.Promote(t.Context(), v1); err != nil {
		t.Fatal(err)
	}
	v2, _ := p.put(ds, models.Params{"note": "second"})
	p.interval = time.Minute
	p.run(1, nil)
	streamtest.WaitFor(t, 10*time.Second, "annotator serving v1", func() bool { return p.annot.ModelVersion() == v1 })
	if err := p.reg.SetCandidate(t.Context(), v2); err != nil {
		t.Fatal(err)
	}
	d := streamtest.WaitFor(t, 5*time.Second, "the candidate in shadow", func() bool { return p.tracker.Shadow() == v2 })
	t.Logf("candidate %s set by hand taken into shadow after %v (tracker round: 1 min)", v2, d)
	body := ""
	streamtest.WaitExplained(t, 10*time.Second, 20*time.Millisecond, func() bool {
		rr := httptest.NewRecorder()
		p.annot.Handler(nil).ServeHTTP(rr, httptest.NewRequest("GET", "/readyz", nil))
		body = rr.Body.String()
		return rr.Code == http.StatusOK && strings.Contains(body, "shadow candidate "+v2)
	}, func() string { return "/readyz naming the candidate; last:\n" + body })
	if err := p.reg.ClearCandidate(t.Context(), v2); err != nil {
		t.Fatal(err)
	}
	streamtest.WaitFor(t, 5*time.Second, "the candidate out of shadow", func() bool { return p.tracker.Shadow() == "" })
}

package annotate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/schemaref"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// harness is a broker, an in-process Redis with a model registry, and the
// topics of one test.
type harness struct {
	t       *testing.T
	brokers []string
	topics  wire.Topics
	reg     *featurestore.Registry
	cache   *featurecache.Cache
	kinds   *models.Registry
	stopRed func()
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	topics := wire.DefaultTopics()
	brokers := streamtest.StartBroker(t, 3, topics.All()...)
	_, rdb, stop := streamtest.StartRedis(t)
	return &harness{t: t, brokers: brokers, topics: topics, reg: featurestore.NewRegistry(rdb, "t"),
		cache: featurecache.New(rdb, "tf", time.Minute, 10000), kinds: models.NewRegistry(streamtest.CentroidKind()), stopRed: stop}
}

// publishModel fits the centroid model on ds and makes it current.
func (h *harness) publishModel(ds *mil.Dataset, params models.Params) string {
	h.t.Helper()
	return streamtest.PublishModel(h.t, h.reg, ds, params)
}

func (h *harness) startAnnotator(ctx context.Context, name string, mutate func(*AnnotatorConfig)) (*Annotator, <-chan error) {
	h.t.Helper()
	cfg := AnnotatorConfig{Brokers: h.brokers, GroupID: "annotators", Topics: h.topics, Name: name, Kinds: h.kinds,
		Store: h.reg, Cache: h.cache, PollInterval: 200 * time.Millisecond, SessionTimeout: 2 * time.Second,
		Obs: service.Observability{Logger: streamtest.Logger(h.t)}}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := NewAnnotator(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return a, done
}

// collect tails the annotations and dead-letter topics until want ids are
// seen in total or the timeout passes.
func (h *harness) collect(ctx context.Context, want int, timeout time.Duration) (map[string][]wire.AnnotationMessage, []wire.DeadLetter) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var mu sync.Mutex
	anns := map[string][]wire.AnnotationMessage{}
	var dead []wire.DeadLetter
	seen := func() int { return len(anns) + len(dead) }
	var wg sync.WaitGroup
	for _, topic := range []string{h.topics.Annotations, h.topics.DeadLetter} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := kafkaio.Tail(ctx, h.brokers, kafkasec.Conn{}, topic, func(m kafka.Message) error {
				mu.Lock()
				defer mu.Unlock()
				if topic == h.topics.Annotations {
					var a wire.AnnotationMessage
					if err := json.Unmarshal(m.Value, &a); err != nil {
						return err
					}
					anns[a.BagID] = append(anns[a.BagID], a)
				} else {
					var d wire.DeadLetter
					if err := json.Unmarshal(m.Value, &d); err != nil {
						return err
					}
					dead = append(dead, d)
				}
				if seen() >= want {
					cancel()
				}
				return nil
			})
			if err != nil {
				h.t.Error(err)
			}
		}()
	}
	wg.Wait()
	return anns, dead
}

func TestAnnotatorAnnotatesEveryBagOnce(t *testing.T) {
	h := newHarness(t)
	ctx, cancel, ds, version := h.withModel(60)
	_, done := h.startAnnotator(ctx, "a1", nil)

	pub := h.publisher(ingest.PublisherConfig{LabelFraction: 0.5, Seed: 1})
	if rej, err := pub.PublishDataset(ctx, ds, ds.Bags); err != nil || len(rej) != 0 {
		t.Fatalf("publish: %v %v", rej, err)
	}
	anns, dead := h.collect(ctx, len(ds.Bags), 30*time.Second)
	if len(dead) != 0 {
		t.Errorf("dead letters for valid bags: %+v", dead)
	}
	if len(anns) != len(ds.Bags) {
		t.Fatalf("%d of %d bags annotated", len(anns), len(ds.Bags))
	}
	v := schemaref.MustNew(0)
	modes := map[string]int{}
	for _, b := range ds.Bags {
		as := anns[b.ID]
		if len(as) != 1 {
			t.Errorf("bag %s annotated %d times in a clean run", b.ID, len(as))
			continue
		}
		a := as[0]
		raw, _ := json.Marshal(a)
		if err := v.ValidateAnnotation(raw); err != nil {
			t.Errorf("annotation does not match its schema: %v", err)
		}
		modes[a.Mode]++
		wantMode := models.Inductive
		if pub.KeepLabels(b.ID) {
			wantMode = models.Transductive
		}
		if a.Mode != string(wantMode) || a.ModelVersion != version {
			t.Errorf("bag %s: mode %s version %s, want %s %s", b.ID, a.Mode, a.ModelVersion, wantMode, version)
		}
		for i, l := range b.InstanceLabels {
			if a.InstanceLabels[i] != l {
				t.Errorf("bag %s instance %d: label %d, want %d (separable toy data)", b.ID, i, a.InstanceLabels[i], l)
			}
		}
	}
	if modes["inductive"] == 0 || modes["transductive"] == 0 {
		t.Errorf("label fraction 0.5 gave modes %v", modes)
	}
	st := pub.Stats()
	if st.Published != len(ds.Bags) || st.Labeled != modes["transductive"] {
		t.Errorf("ingest stats %+v, modes %v", st, modes)
	}
	stopAnnotator(t, cancel, done)
}

func TestAnnotatorDeadLetters(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ds := streamtest.SmallDataset(30)
	h.publishModel(ds, models.Params{"max_labels": "2"})
	_, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) { c.MaxMessageBytes = 4000 })

	good := func(i int) []byte {
		b := ds.Bags[i]
		raw, _ := json.Marshal(wire.NewBagMessage(&b, "toy", 2, ds.Classes, false))
		return raw
	}
	bad := []struct {
		raw  string
		want wire.Reason
	}{
		{`{"schema_version":1,"id":"bad-json","dim":2,"instances":[[1,2]`, wire.ReasonMalformedJSON},
		{`{"schema_version":1,"id":"bad-dim","dim":3,"instances":[[1,2,3]]}`, wire.ReasonDimension},
		{`{"schema_version":1,"id":"bad-rowdim","dim":2,"instances":[[1,2],[3]]}`, wire.ReasonDimension},
		{`{"schema_version":1,"id":"bad-nan","dim":2,"instances":[[1,"NaN"]]}`, wire.ReasonNonFinite},
		{`{"schema_version":1,"id":"bad-inf","dim":2,"instances":[["+Inf",1]]}`, wire.ReasonNonFinite},
		{`{"schema_version":1,"id":"bad-empty","dim":2,"instances":[]}`, wire.ReasonEmptyBag},
		{`{"schema_version":1,"id":"bad-labels","dim":2,"instances":[[1,2]],"labels":[0,1,2],"classes":["a","b","c"]}`, wire.ReasonLabelSetTooLarge},
		{`{"schema_version":1,"id":"bad-vocab","dim":2,"instances":[[1,2]],"labels":[0],"classes":["x","y","z"]}`, wire.ReasonVocabulary},
		{`{"schema_version":1,"id":"bad-big","dim":2,"instances":[` + strings.Repeat("[0.5,0.5],", 500) + `[0.5,0.5]]}`, wire.ReasonOversize},
	}
	w := kafkaio.NewWriter(h.brokers, kafkasec.Conn{})
	defer w.Close()
	var msgs []kafka.Message
	gi := 0
	for bi, b := range bad {
		for range 3 {
			msgs = append(msgs, kafka.Message{Topic: h.topics.Annotate, Key: []byte(ds.Bags[gi].ID), Value: good(gi)})
			gi++
		}
		msgs = append(msgs, kafka.Message{Topic: h.topics.Annotate, Key: []byte(fmt.Sprintf("bad-%d", bi)), Value: []byte(b.raw)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	anns, dead := h.collect(ctx, len(msgs), 30*time.Second)
	if len(anns) != gi {
		t.Errorf("%d good bags annotated, want %d", len(anns), gi)
	}
	v := schemaref.MustNew(0)
	got := map[string]wire.DeadLetter{}
	for _, d := range dead {
		got[d.Key] = d
		raw, _ := json.Marshal(d)
		if err := v.ValidateDeadLetter(raw); err != nil {
			t.Errorf("dead letter does not match its schema: %v", err)
		}
	}
	for bi, b := range bad {
		d, ok := got[fmt.Sprintf("bad-%d", bi)]
		if !ok {
			t.Errorf("no dead letter for %s", b.want)
			continue
		}
		if d.Reason != b.want || d.Stage != wire.StageAnnotate || d.Topic != h.topics.Annotate || d.Offset < 0 || d.OriginalSize != len(b.raw) {
			t.Errorf("dead letter %+v, want reason %s", d, b.want)
		}
		if b.want != wire.ReasonOversize && string(d.Original) != b.raw {
			t.Errorf("%s: original bytes not kept", b.want)
		}
	}
	stopAnnotator(t, cancel, done)
}

func TestHotSwapAndRollbackReachEveryAnnotator(t *testing.T) {
	h := newHarness(t)
	ctx, cancel, ds, v1 := h.withModel(30)
	// A long poll interval: the swap must come from the notification.
	slow := func(c *AnnotatorConfig) { c.PollInterval = time.Minute }
	a1, done1 := h.startAnnotator(ctx, "a1", slow)
	a2, done2 := h.startAnnotator(ctx, "a2", slow)
	streamtest.WaitFor(t, 5*time.Second, "annotators ready", func() bool { return a1.Ready() && a2.Ready() })

	v2 := h.publishModel(ds, models.Params{"iters": "3"})
	d := streamtest.WaitFor(t, time.Second, "promotion reaches both annotators", func() bool {
		return a1.ModelVersion() == v2 && a2.ModelVersion() == v2
	})
	t.Logf("promotion of %s reached both annotators in %v", v2, d)

	h.publish(ctx, ingest.PublisherConfig{LabelFraction: 1}, ds, ds.Bags[:10])
	anns, _ := h.collect(ctx, 10, 20*time.Second)
	for id, as := range anns {
		if as[0].ModelVersion != v2 {
			t.Errorf("bag %s annotated by %s after promotion of %s", id, as[0].ModelVersion, v2)
		}
	}

	back, err := h.reg.Rollback(ctx)
	if err != nil || back != v1 {
		t.Fatalf("rollback = %s, %v; want %s", back, err, v1)
	}
	d = streamtest.WaitFor(t, time.Second, "rollback reaches both annotators", func() bool {
		return a1.ModelVersion() == v1 && a2.ModelVersion() == v1
	})
	t.Logf("rollback to %s reached both annotators in %v", v1, d)
	cancel()
	for _, done := range []<-chan error{done1, done2} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestAnnotatorKeepsServingWhenRedisIsDown(t *testing.T) {
	h := newHarness(t)
	ctx, cancel, ds, v1 := h.withModel(40)
	a, done := h.startAnnotator(ctx, "a1", nil)
	streamtest.WaitFor(t, 5*time.Second, "annotator ready", a.Ready)
	h.stopRed()

	h.publish(ctx, ingest.PublisherConfig{LabelFraction: 0.5}, ds, ds.Bags)
	anns, dead := h.collect(ctx, len(ds.Bags), 30*time.Second)
	if len(anns) != len(ds.Bags) || len(dead) != 0 {
		t.Fatalf("with Redis down: %d annotated, %d dead letters, want %d and 0", len(anns), len(dead), len(ds.Bags))
	}
	for _, as := range anns {
		if as[0].ModelVersion != v1 {
			t.Fatalf("served %s, want the held %s", as[0].ModelVersion, v1)
		}
	}
	// Several poll periods with Redis down change nothing.
	time.Sleep(500 * time.Millisecond)
	if !a.Ready() || a.ModelVersion() != v1 {
		t.Fatalf("ready %v version %s after Redis went down", a.Ready(), a.ModelVersion())
	}
	stopAnnotator(t, cancel, done)
}

package annotate

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/baseline"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/schemaref"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// logRecorder keeps the records logged at or above a level.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// count returns how many records at level have msg.
func (l *logRecorder) count(level slog.Level, msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level == level && r.Message == msg {
			n++
		}
	}
	return n
}

// readyz returns the status and body of the annotator's /readyz.
func readyz(a *Annotator) (int, string) {
	rr := httptest.NewRecorder()
	a.Handler(nil).ServeHTTP(rr, httptest.NewRequest("GET", "/readyz", nil))
	return rr.Code, rr.Body.String()
}

func metrics(h http.Handler) string {
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	return rr.Body.String()
}

// refusingStore refuses one version with an error of its own, as a
// registry that checks signatures refuses an unsigned blob: the annotator
// must treat any error about the current version alike.
// While down, it answers as an unreachable Redis would, so a test can
// change the registry without the annotator seeing it half done.
type refusingStore struct {
	*featurestore.Registry
	refuse atomic.Value // version (string)
	down   atomic.Bool
}

var errUnsigned = errors.New("featurestore: model blob is not signed by a trusted key")

var errDown = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

func (s *refusingStore) Alias(ctx context.Context, alias string) (string, error) {
	if s.down.Load() {
		return "", errDown
	}
	return s.Registry.Alias(ctx, alias)
}

func (s *refusingStore) Current(ctx context.Context) ([]byte, featurestore.VersionMeta, error) {
	if s.down.Load() {
		return nil, featurestore.VersionMeta{}, errDown
	}
	blob, meta, err := s.Registry.Current(ctx)
	if err == nil && meta.Version == s.refuse.Load() {
		return nil, featurestore.VersionMeta{}, errUnsigned
	}
	return blob, meta, err
}

// TestCorruptCurrentModelLoggedOnceAndReported promotes, over a served
// model, versions the annotator cannot serve: a blob corrupted in Redis, a
// model of a kind it cannot decode, a version the store refuses. Each is
// logged once at ERROR however many polls see it, /readyz stays 200 while
// the held model serves and names the refused version and why, the gauge
// says so; a servable promotion clears it. An annotator holding no model
// answers 503 with the reason.
func TestCorruptCurrentModelLoggedOnceAndReported(t *testing.T) {
	h := newHarness(t)
	_, rdb, _ := streamtest.StartRedis(t)
	h.reg = featurestore.NewRegistry(rdb, "t")
	ctx, cancel, ds, v1 := h.withModel(30)
	rec, prov, obs := observed()
	store := &refusingStore{Registry: h.reg}
	store.refuse.Store("")
	a, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) {
		obs(c)
		c.Store = store
		c.PollInterval = 50 * time.Millisecond
	})
	streamtest.WaitFor(t, 10*time.Second, "annotator ready", a.Ready)

	corrupt := func(version string) {
		keys, err := rdb.Keys(ctx, "*:blob:"+version).Result()
		if err != nil || len(keys) != 1 {
			t.Fatalf("blob key of %s: %v %v", version, keys, err)
		}
		if err := rdb.Set(ctx, keys[0], "not the blob", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	promoteBlob := func(blob []byte) string {
		meta, err := h.reg.Put(ctx, blob, featurestore.VersionMeta{})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.reg.Promote(ctx, meta.Version); err != nil {
			t.Fatal(err)
		}
		return meta.Version
	}
	dummy, err := baseline.DummyKind().Fit(ctx, ds, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dummyBlob, _ := models.Encode(dummy)
	cases := []struct {
		name    string
		promote func() string
		reason  string
	}{
		{"corrupt blob", func() string {
			v := h.publishModel(ds, models.Params{"iters": "2"})
			corrupt(v)
			return v
		}, "corrupt"},
		{"undecodable kind", func() string { return promoteBlob(dummyBlob) }, "decode model"},
		{"refused by the store", func() string {
			v := h.publishModel(ds, models.Params{"iters": "3"})
			store.refuse.Store(v)
			return v
		}, errUnsigned.Error()},
	}
	for _, c := range cases {
		// Promoted (and corrupted) while the annotator cannot look, so it
		// never loads the version before it is broken.
		store.down.Store(true)
		bad := c.promote()
		store.down.Store(false)
		streamtest.WaitFor(t, 5*time.Second, c.name+" refused", func() bool {
			v, _ := a.Refused()
			return v == bad
		})
		time.Sleep(500 * time.Millisecond) // ten polls and notifications
		if n := rec.count(slog.LevelError, "refusing model version; serving the model held"); n != 1 {
			t.Errorf("%s: refusal logged %d times at ERROR, want once", c.name, n)
		}
		code, body := readyz(a)
		if code != http.StatusOK || !strings.HasPrefix(body, "ok "+v1+"\n") || !strings.Contains(body, "current model version "+bad+" refused") || !strings.Contains(body, c.reason) {
			t.Errorf("%s: /readyz %d %q", c.name, code, body)
		}
		if m := metrics(prov.MetricsHandler); !strings.Contains(m, `mimlstream_annotator_model_refused{otel_scope_name="github.com/mimlstream/mimlstream/internal/stream",otel_scope_schema_url="",otel_scope_version="",version="`+bad+`"} 1`) {
			t.Errorf("%s: model_refused gauge not set:\n%s", c.name, grepLines(m, "model_refused"))
		}
		if a.ModelVersion() != v1 {
			t.Fatalf("%s: serving %s, want the held %s", c.name, a.ModelVersion(), v1)
		}
		rec.mu.Lock()
		rec.recs = nil
		rec.mu.Unlock()
	}
	// A servable promotion clears the refusal.
	v := h.publishModel(ds, models.Params{"iters": "4"})
	streamtest.WaitFor(t, 5*time.Second, "servable version loaded", func() bool { return a.ModelVersion() == v })
	if code, body := readyz(a); code != http.StatusOK || body != "ok "+v+"\n" {
		t.Errorf("after a servable promotion: /readyz %d %q", code, body)
	}
	if m := metrics(prov.MetricsHandler); !strings.Contains(m, "mimlstream_annotator_model_refused{") || !strings.Contains(grepLines(m, "mimlstream_annotator_model_refused{"), "} 0") {
		t.Errorf("model_refused gauge not cleared:\n%s", grepLines(m, "model_refused"))
	}

	// An annotator that has no model yet serves the newest formerly
	// current version it can (v), and says why.
	bad := h.publishModel(ds, models.Params{"iters": "5"})
	corrupt(bad)
	fresh, done2 := h.startAnnotator(ctx, "fresh", func(c *AnnotatorConfig) { c.PollInterval = 50 * time.Millisecond })
	streamtest.WaitFor(t, 10*time.Second, "fallback", func() bool { return fresh.ModelVersion() == v && fresh.Ready() })
	if code, body := readyz(fresh); code != http.StatusOK || !strings.Contains(body, "current model version "+bad+" refused") ||
		!strings.Contains(body, "serving "+v) {
		t.Errorf("fallback: /readyz %d %q", code, body)
	}
	// With no formerly current version to fall back on: 503, and why.
	lone := featurestore.NewRegistry(rdb, "lone")
	blob, err := models.Encode(dummy)
	if err != nil {
		t.Fatal(err)
	}
	only, err := lone.Put(ctx, blob, featurestore.VersionMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if err := lone.Promote(ctx, only.Version); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "{lone}:blob:"+only.Version, "not the blob", 0).Err(); err != nil {
		t.Fatal(err)
	}
	none, done3 := h.startAnnotator(ctx, "none", func(c *AnnotatorConfig) { c.Store = lone; c.PollInterval = 50 * time.Millisecond })
	streamtest.WaitFor(t, 5*time.Second, "refusal without a model", func() bool {
		v, _ := none.Refused()
		return v == only.Version
	})
	if code, body := readyz(none); code != http.StatusServiceUnavailable || !strings.Contains(body, "no model loaded; current model version "+only.Version+" refused") {
		t.Errorf("no model: /readyz %d %q", code, body)
	}
	cancel()
	for _, d := range []<-chan error{done, done2, done3} {
		if err := <-d; err != nil {
			t.Fatal(err)
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, "\n")
}

// faultBroker moves the harness to a kfake cluster with the pipeline's
// topics, for tests that inject produce or fetch errors.
func (h *harness) faultBroker() *kfake.Cluster {
	h.t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, h.topics.All()...),
		kfake.GroupMinSessionTimeout(500*time.Millisecond),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(c.Close)
	h.brokers = c.ListenAddrs()
	return c
}

// TestStalledWritesAreVisible: while the broker fails every write of
// annotations with a retriable error, the annotator keeps retrying the
// batch (its partitions do not advance); past the stall bound /readyz
// answers 503 naming the partitions and the error, the stalled gauge is 1
// and the stall is logged at ERROR. When the fault clears the batch goes
// out and the annotator is ready again.
func TestStalledWritesAreVisible(t *testing.T) {
	h := newHarness(t)
	c := h.faultBroker()
	ctx, cancel, ds, _ := h.withModel(20)
	rec, prov, obs := observed()
	a, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) {
		obs(c)
		c.StallAfter = 500 * time.Millisecond
	})
	streamtest.WaitFor(t, 10*time.Second, "annotator ready", a.Ready)
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: h.topics.Annotations, Err: kerr.NotEnoughReplicas, Count: -1})
	h.publish(ctx, ingest.PublisherConfig{LabelFraction: 0}, ds, ds.Bags)
	streamtest.WaitFor(t, 20*time.Second, "stall reported", func() bool { return !a.Ready() })
	code, body := readyz(a)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "stalled") || !strings.Contains(body, "partitions [") || !strings.Contains(body, "Not Enough Replicas") {
		t.Errorf("/readyz during the stall: %d %q", code, body)
	}
	m := metrics(prov.MetricsHandler)
	if !strings.Contains(grepLines(m, "mimlstream_annotator_stalled{"), "} 1") {
		t.Errorf("stalled gauge not 1:\n%s", grepLines(m, "stalled"))
	}
	// The ERROR comes with the first retry past the bound.
	streamtest.WaitFor(t, 5*time.Second, "stall logged at ERROR", func() bool {
		return rec.count(slog.LevelError, "write stalled: still failing; retrying") == 1
	})
	if n := rec.count(slog.LevelWarn, "write failed; retrying"); n != 1 {
		t.Errorf("first failure logged %d times at WARN, want once", n)
	}
	fault.Remove()
	anns, dead := h.collect(ctx, len(ds.Bags), 30*time.Second)
	if len(anns) != len(ds.Bags) || len(dead) != 0 {
		t.Fatalf("after the fault: %d annotated, %d dead letters; want %d and 0", len(anns), len(dead), len(ds.Bags))
	}
	streamtest.WaitFor(t, 10*time.Second, "ready again", a.Ready)
	if !strings.Contains(grepLines(metrics(prov.MetricsHandler), "mimlstream_annotator_stalled{"), "} 0") {
		t.Error("stalled gauge not back to 0")
	}
	stopAnnotator(t, cancel, done)
}

// TestRefusedOutputDeadLettersItsInput: when the broker refuses the
// annotations themselves for good (too large for the topic, an invalid
// record), each bag is dead-lettered with the refusal's reason instead, and
// the stream moves on: nothing is retried forever.
func TestRefusedOutputDeadLettersItsInput(t *testing.T) {
	cases := []struct {
		err  *kerr.Error
		want wire.Reason
	}{
		{kerr.MessageTooLarge, wire.ReasonOversize},
		{kerr.InvalidRecord, wire.ReasonProduceRefused},
	}
	for _, tc := range cases {
		t.Run(string(tc.want), func(t *testing.T) {
			h := newHarness(t)
			c := h.faultBroker()
			ctx, cancel, ds, _ := h.withModel(12)
			c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: h.topics.Annotations, Err: tc.err, Count: -1})
			a, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) { c.StallAfter = time.Hour })
			streamtest.WaitFor(t, 10*time.Second, "annotator ready", a.Ready)
			h.publish(ctx, ingest.PublisherConfig{LabelFraction: 0}, ds, ds.Bags)
			anns, dead := h.collect(ctx, len(ds.Bags), 30*time.Second)
			if len(anns) != 0 || len(dead) != len(ds.Bags) {
				t.Fatalf("%d annotations and %d dead letters, want 0 and %d", len(anns), len(dead), len(ds.Bags))
			}
			v := schemaref.MustNew(0)
			for _, d := range dead {
				raw, _ := json.Marshal(d)
				if d.Reason != tc.want || d.Stage != wire.StageAnnotate || !strings.Contains(d.Error, "refused by the broker") || d.Offset < 0 || v.ValidateDeadLetter(raw) != nil {
					t.Errorf("dead letter %+v", d)
				}
			}
			stopAnnotator(t, cancel, done)
		})
	}
}

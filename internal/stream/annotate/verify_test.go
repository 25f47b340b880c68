package annotate

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestUnverifiableCurrentFallsBack: a current version whose signature does
// not verify (a tampered blob promoted through a registry without the key)
// leaves an annotator started afterwards serving the newest formerly
// current version that verifies, loudly (an ERROR, /readyz naming both),
// instead of holding no model and consuming nothing; a good promotion then
// ends the fallback. Catches a fleet restart stopping the pipeline.
func TestUnverifiableCurrentFallsBack(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, rdb, _ := streamtest.StartRedis(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer := featurestore.NewRegistry(rdb, "s", featurestore.WithSigningKey(priv))
	plain := featurestore.NewRegistry(rdb, "s")
	ds := streamtest.SmallDataset(30)
	fit := func(iters string) []byte {
		m, err := streamtest.CentroidKind().Fit(ctx, ds, models.FitOptions{Params: models.Params{"iters": iters}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := models.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good, err := signer.Put(ctx, fit("1"), featurestore.VersionMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if err := signer.Promote(ctx, good.Version); err != nil {
		t.Fatal(err)
	}
	// Another blob under good's signature, stored and promoted by someone
	// without the key.
	bad, err := plain.Put(ctx, fit("2"), featurestore.VersionMeta{Signature: good.Signature})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Promote(ctx, bad.Version); err != nil {
		t.Fatal(err)
	}
	rec := &logRecorder{}
	a, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) {
		c.Store = featurestore.NewRegistry(rdb, "s", featurestore.WithVerifyKey(pub))
		c.PollInterval = 50 * time.Millisecond
		c.Obs.Logger = slog.New(rec)
	})
	ok := false
	for end := time.Now().Add(5 * time.Second); !ok && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		ok = a.Ready()
	}
	code, body := readyz(a)
	t.Logf("annotator started with %s (bad signature) current and %s before it: ready=%v, serving %q; /readyz %d %q",
		bad.Version, good.Version, ok, a.ModelVersion(), code, body)
	if !ok || a.ModelVersion() != good.Version {
		t.Fatalf("serving %q, ready %v; want %s, the newest formerly current version that verifies", a.ModelVersion(), ok, good.Version)
	}
	if code != http.StatusOK || !strings.Contains(body, "current model version "+bad.Version+" refused") ||
		!strings.Contains(body, "signature") || !strings.Contains(body, "serving "+good.Version) {
		t.Errorf("/readyz does not name the refused version, the reason and the fallback: %d %q", code, body)
	}
	if n := rec.count(slog.LevelError, "current model version refused; serving the newest formerly current version that verifies"); n != 1 {
		t.Errorf("fallback logged %d times at ERROR, want once", n)
	}
	h.publish(ctx, ingest.PublisherConfig{}, ds, ds.Bags[:5])
	anns, dead := h.collect(ctx, 5, 20*time.Second)
	if len(anns) != 5 || len(dead) != 0 {
		t.Fatalf("%d annotated, %d dead letters of 5 bags", len(anns), len(dead))
	}
	for id, as := range anns {
		if as[0].ModelVersion != good.Version {
			t.Errorf("bag %s annotated by %s, want %s", id, as[0].ModelVersion, good.Version)
		}
	}
	// A good promotion ends the fallback.
	next, err := signer.Put(ctx, fit("3"), featurestore.VersionMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if err := signer.Promote(ctx, next.Version); err != nil {
		t.Fatal(err)
	}
	streamtest.WaitFor(t, 5*time.Second, "good promotion served", func() bool { return a.ModelVersion() == next.Version })
	if code, body := readyz(a); code != http.StatusOK || body != "ok "+next.Version+"\n" {
		t.Errorf("/readyz after a good promotion: %d %q", code, body)
	}
	stopAnnotator(t, cancel, done)
}

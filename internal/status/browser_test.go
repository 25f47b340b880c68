package status_test

import (
	"context"
	"fmt"
	"github.com/redis/go-redis/v9"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/kafkaview"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
	"github.com/mimlstream/mimlstream/internal/status"
	"github.com/mimlstream/mimlstream/internal/stream/annotate"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/quality"
	"github.com/mimlstream/mimlstream/internal/stream/retrain"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/realpart"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

const (
	chromium = "/usr/bin/chromium"
	// screenshotEnv names a file to write the page's screenshot to (the
	// one in docs/ is made so).
	screenshotEnv = "MIMLSTREAM_STATUS_SCREENSHOT"
	// pageKind is the model kind the page's retrainer refits and the
	// late promotion fits: a real one, so that the page (and its
	// screenshot in docs/) shows the quality an operator sees.
	pageKind = "orlr"
)

// browserAndRedis stops the test unless headless Chromium and the real
// Redis are there (failing under CI=true), and returns a client of that
// Redis and a key prefix named after name, whose keys are deleted when the
// test ends.
func browserAndRedis(t *testing.T, name string) (redis.UniversalClient, string) {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		realpart.Missing(t, "headless Chromium is not installed at %s (apt-get install chromium; .ci/run installs it): %v", chromium, err)
	}
	redisAddr := redistest.Real(t)
	rdb, err := redisflag.Dial(t.Context(), redisflag.Options{Addr: redisAddr})
	if err != nil {
		t.Fatalf("Redis at %s answered PING but Connect failed: %v", redisAddr, err)
	}
	prefix := fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	t.Cleanup(func() {
		streamtest.DeleteKeys(context.Background(), rdb, "{"+prefix+"*")
		rdb.Close()
	})
	return rdb, prefix
}

// TestStatusPageInChromium runs the pipeline for real (the embedded broker,
// the real Redis, ingest, an annotator and a retrainer, MSCV2 bags with a
// few malformed and wrong-dimension ones), serves the status page, and
// loads it in headless Chromium: the page shows the model versions with
// their aliases, the refits, the dead letters by reason and the lag of
// every partition, draws every plot, and picks up a promotion made after
// it loaded without being reloaded.
// openInChromium loads url in a headless Chromium that lives until the
// test ends, and returns within, which bounds one browser step by d.
func openInChromium(t *testing.T, url string) (within func(d time.Duration) context.Context) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("headless", true), chromedp.Flag("disable-background-networking", true), chromedp.WindowSize(1500, 1000))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("load the page in Chromium: %v", err)
	}
	return func(d time.Duration) context.Context {
		c, cancel := context.WithTimeout(bctx, d)
		t.Cleanup(cancel)
		return c
	}
}

func TestStatusPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline and a browser; skipped with -short")
	}
	rdb, prefix := browserAndRedis(t, "status")
	redisAddr := redistest.Addr() // the one browserAndRedis checked
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	topics := wire.DefaultTopics()
	brokers := streamtest.StartBroker(t, 4, topics.All()...)
	reg := featurestore.NewRegistry(rdb, prefix+":models")
	kinds := catalog.New()

	mscv2, err := dataset.Load("../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		t.Fatal(err)
	}
	musk1, err := dataset.Load("../../testdata/musk1/musk1.data")
	if err != nil {
		t.Fatal(err)
	}
	// The registry: the model served from the start, and a model of
	// another dataset that was stored but never promoted.
	// v1 is a baseline that the retrainer's real refits beat on held-out
	// bags, as in the README's quickstart, so that they reach the
	// annotators as shadow candidates and get a verdict on every run.
	v1 := store(t, kinds, reg, "dummy", mscv2, mscv2.Bags[:100], "baseline (dummy) on the first 100 MSCV2 bags", true)
	store(t, kinds, reg, "misvm", musk1, musk1.Bags, "offline fit on musk1 (another input dimension)", false)

	env := service.Env{Stdout: &strings.Builder{}, Stderr: &syncDiscard{}}
	acfg := annotate.DefaultConfig()
	acfg.Kafka.Brokers, acfg.Kafka.Create = brokers, false
	acfg.Redis.Addr, acfg.Redis.RegistryPrefix = redisAddr, prefix+":models"
	acfg.Name, acfg.Listen, acfg.NoFeatureCache, acfg.Poll, acfg.SessionTimeout = "annotator-a", "", true, 200*time.Millisecond, 2*time.Second
	// Live quality of every labeled bag, in one-second buckets so a short
	// run draws a line; shadow candidates judged after 40 bags (a refit
	// every 100 labeled bags leaves each candidate about 100 in shadow).
	acfg.QualitySampleRate, acfg.QualityBucket, acfg.QualityInterval, acfg.ShadowMinBags = 1, time.Second, 200*time.Millisecond, 40
	an, err := annotate.New(ctx, env, kinds, acfg)
	if err != nil {
		t.Fatal(err)
	}
	defer an.Close()
	rcfg := retrain.DefaultServeConfig()
	rcfg.Kafka.Brokers, rcfg.Kafka.Create = brokers, false
	rcfg.Redis.Addr, rcfg.Redis.RegistryPrefix = redisAddr, prefix+":models"
	rcfg.Fit.Kind, rcfg.Every, rcfg.MinBags, rcfg.Listen = pageKind, 100, 40, ""
	rcfg.Shadow = true // refits go to the annotators as shadow candidates
	rt, err := retrain.NewServe(ctx, env, kinds, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	retrainerHTTP := httptest.NewServer(rt.Handler())
	defer retrainerHTTP.Close()
	runs := make(chan error, 2)
	go func() { runs <- an.Run(ctx) }()
	go func() { runs <- rt.Run(ctx) }()

	// Beside the vector bags' annotations, those of photos and documents
	// (as TestStatusGalleryInChromium checks them), for the gallery.
	media := mediaAnnotations(t)
	publishAnnotations(t, brokers, topics.Annotations, media.annotations)
	c, err := status.NewCollector(status.Config{Registry: reg, Kafka: kafkaview.New(brokers, kafkasec.Conn{}), Topics: topics,
		Group: acfg.Group, Retrainer: retrainerHTTP.URL, Interval: 250 * time.Millisecond, Quality: quality.NewStore(rdb, prefix+":models", time.Second, 0),
		MediaRoot: media.root})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Run(ctx) }()
	page := httptest.NewServer(status.Handler(c, 400*time.Millisecond, nil))
	defer page.Close()

	// Traffic in waves, so the throughput plot has a shape: MSCV2 bags
	// (half labeled, which the retrainer also reads), musk1 bags the
	// served model cannot take, and malformed messages ingest rejects.
	pub := publisher(t, brokers, topics, 0.5)
	unlabeled := publisher(t, brokers, topics, 0)
	const waves = 6
	per := len(mscv2.Bags) / waves
	for w := range waves {
		if _, err := pub.PublishDataset(ctx, mscv2, mscv2.Bags[w*per:(w+1)*per]); err != nil {
			t.Fatal(err)
		}
		if w%2 == 1 {
			if _, err := unlabeled.PublishDataset(ctx, musk1, musk1.Bags[w:w+3]); err != nil {
				t.Fatal(err)
			}
			if _, _, err := pub.PublishRaw(ctx, [][]byte{[]byte(`{"id": "truncated`), []byte(`{"schema_version":1,"id":"x","dim":2,"instances":[[1,"NaN"]]}`)}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(600 * time.Millisecond)
	}
	streamtest.WaitExplained(t, 60*time.Second, 50*time.Millisecond, func() bool {
		s := c.Snapshot()
		return s.Seq > 0 && s.Throughput != nil && s.LagTotal == 0 && len(s.Refits) >= 2 && s.DeadLetters.ByReason[string(wire.ReasonDimension)] == 9 &&
			len(s.Live) >= 2 && len(s.Verdicts) >= 1
	}, func() string {
		return fmt.Sprintf("the annotator did not catch up, or fewer than two refits, two versions scored live and a shadow verdict: %+v", c.Snapshot())
	})

	within := openInChromium(t, page.URL)
	seq0, err := chromedp.Run(within(20*time.Second), chromedp.Poll[int](`Number(document.body.dataset.seq || 0)`))
	if err != nil {
		t.Fatalf("the page never rendered a status: %v", err)
	}
	// Live: the page polls on its own and redraws.
	if _, err := chromedp.Run(within(20*time.Second), chromedp.Poll[bool](fmt.Sprintf(`Number(document.body.dataset.seq) > %d`, seq0))); err != nil {
		t.Fatalf("the page did not update after poll %d: %v", seq0, err)
	}
	text := func(sel string) string {
		s, err := chromedp.Run(within(10*time.Second), chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	if h := text("#health"); h != "all sources ok" {
		t.Errorf("health %q, want all sources ok", h)
	}
	modelsText := text("#models")
	for _, want := range []string{pageKind, "166", "offline fit on musk1", "hamming_loss"} {
		if !strings.Contains(modelsText, want) {
			t.Errorf("models table lacks %q:\n%s", want, modelsText)
		}
	}
	for _, want := range []string{"dimension", "malformed_json", "non_finite", "total"} {
		if dl := text("#deadletters"); !strings.Contains(dl, want) {
			t.Errorf("dead-letter table lacks %q:\n%s", want, dl)
		}
	}
	rows, err := chromedp.Run(within(10*time.Second), chromedp.Evaluate[[]int](`["#lag", "#refits", "#models"].map(s => document.querySelectorAll(s + " tr").length)`))
	if err != nil {
		t.Fatal(err)
	}
	if rows[0] != 4 || rows[1] < 2 || rows[2] < 3 {
		t.Errorf("rows: lag %d (want 4 partitions), refits %d (want >= 2), models %d (want >= 3)", rows[0], rows[1], rows[2])
	}
	if refits := text("#refits"); !strings.Contains(refits, "promoted") && !strings.Contains(refits, "kept current") && !strings.Contains(refits, "in shadow") {
		t.Errorf("refit table shows no outcome:\n%s", refits)
	}
	// Live quality: v1 served from the start was scored on the labeled
	// bags, instance accuracy included (audit labels), and the shadow
	// verdicts are listed.
	if live := text("#live"); !strings.Contains(live, v1) || !strings.Contains(live, " over ") {
		t.Errorf("live quality table lacks %s with its instance accuracy:\n%s", v1, live)
	}
	if v := text("#verdicts"); !strings.Contains(v, "promoted: ") && !strings.Contains(v, "rejected: ") {
		t.Errorf("verdict table shows no verdict:\n%s", v)
	}
	// Every plot is an SVG image the browser decoded.
	plots, err := chromedp.Run(within(20*time.Second), chromedp.Poll[[]string](
		`(() => { const imgs = [...document.querySelectorAll("img.plot")];
		  return imgs.length === 6 && imgs.every(i => i.complete && i.naturalWidth > 0) ? imgs.map(i => i.id) : null })()`))
	if err != nil {
		t.Fatalf("the plots did not load: %v", err)
	}
	if len(plots) != 6 {
		t.Errorf("plots %v, want 6", plots)
	}
	// The gallery: the photos under the media root drawn.
	if _, err := chromedp.Run(within(20*time.Second), chromedp.Poll[bool](fmt.Sprintf(
		`(() => { const imgs = [...document.querySelectorAll("#photos img")];
		  return imgs.length === %d && imgs.every(i => i.complete && i.naturalWidth > 0) })()`, len(media.photos)))); err != nil {
		t.Errorf("the gallery's %d photos did not load: %v", len(media.photos), err)
	}

	// A promotion made now reaches the open page without a reload.
	late := store(t, kinds, reg, pageKind, mscv2, mscv2.Bags[:150], "promoted while the page was open", true)
	if _, err := chromedp.Run(within(20*time.Second), chromedp.Poll[bool](fmt.Sprintf(
		`[...document.querySelectorAll("#models tr")].some(tr => tr.cells[0].textContent === %q && tr.cells[1].textContent.includes("current"))`, late))); err != nil {
		t.Errorf("the page never showed %s as current: %v", late, err)
	}
	if late == v1 {
		t.Fatal("no new version stored")
	}

	if out := os.Getenv(screenshotEnv); out != "" {
		// Let the plots catch up with the promotion before the picture.
		time.Sleep(time.Second)
		png, err := chromedp.Run(within(30*time.Second), chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot written to %s", out)
	}
	cancel()
	for range 2 {
		if err := <-runs; err != nil {
			t.Errorf("service: %v", err)
		}
	}
}

// store fits kind on bags and stores it (and promotes it).
func store(t *testing.T, kinds *models.Registry, reg *featurestore.Registry, kindName string, ds *mil.Dataset, bags []mil.Bag, window string, promote bool) string {
	t.Helper()
	kind, err := kinds.Lookup(kindName)
	if err != nil {
		t.Fatal(err)
	}
	sub := *ds
	sub.Bags = bags
	start := time.Now()
	m, err := kind.Fit(t.Context(), &sub, models.FitOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := models.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := reg.Put(t.Context(), blob, featurestore.VersionMeta{TrainingWindow: window,
		Metrics: map[string]float64{"train_bags": float64(len(bags)), "fit_seconds": time.Since(start).Seconds()}})
	if err != nil {
		t.Fatal(err)
	}
	if promote {
		if err := reg.Promote(t.Context(), meta.Version); err != nil {
			t.Fatal(err)
		}
	}
	return meta.Version
}

func publisher(t *testing.T, brokers []string, topics wire.Topics, labelFraction float64) *ingest.Publisher {
	t.Helper()
	// Instance labels travel as audit labels, for the live instance accuracy.
	p, err := ingest.NewPublisher(ingest.PublisherConfig{Brokers: brokers, Topics: topics, LabelFraction: labelFraction, Seed: 1, WithInstanceLabels: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// syncDiscard is a discarding writer for the services' logs.
type syncDiscard struct{}

func (syncDiscard) Write(p []byte) (int, error) { return len(p), nil }

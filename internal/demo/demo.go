// Package demo runs the whole product in one process for `make demo`: an
// embedded Kafka-protocol broker, Redis (in-process unless one is given),
// the ingest of a real dataset as a stream with part of it labeled, the
// retrainer, and two annotators, with live progress and a final summary.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/embedded/broker"
	"github.com/mimlstream/mimlstream/internal/embedded/redisserver"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/signing"
	"github.com/mimlstream/mimlstream/internal/stream/annotate"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/quality"
	"github.com/mimlstream/mimlstream/internal/stream/retrain"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// Config holds the demo's settings.
type config struct {
	data, redisURL, kind string
	brokers              cli.StringList
	rate, labelFraction  float64
	every, minBags       int
	annotators, rounds   int
	params               cli.StringList
	timeout              time.Duration
	verbose              bool
	kafkaSec             kafkasec.Config
}

// Run runs the demo. kinds is the model catalog.
func Run(ctx context.Context, kinds *models.Registry, stdout, stderr io.Writer, args []string) error {
	fs := cli.NewFlagSet("demo", `Usage: demo [flags]

Runs the streaming annotation service end to end in one process: embedded
broker, Redis (in-process unless --redis or $REDIS_URL), ingest of a dataset
with part of it labeled, the retrainer and two annotators, printing live
progress and a summary.

With --media it streams photos instead (the MSRC v2 development photos by
default): the ingest segments and featurizes them, the annotators label
every region, the summary scores the regions against the ground truth, and
a few annotated photos are drawn as PNGs into --pictures.`, stderr)
	var c config
	fs.StringVar(&c.data, "data", "testdata/mscv2/MSCV2.mat", "dataset `file` to stream (needs instance labels for the accuracy)")
	fs.StringVar(&c.redisURL, "redis", os.Getenv("REDIS_URL"), "Redis `address` or URL (default $REDIS_URL; empty: in-process Redis)")
	fs.Var(&c.brokers, "brokers", "Kafka brokers (empty: embedded broker)")
	c.kafkaSec.RegisterFlags(fs)
	fs.StringVar(&c.kind, "model", "orlr", "model `kind` the retrainer fits")
	fs.Var(&c.params, "param", "model parameter `key=value` (repeatable; for orlr the demo adds iters=20, msteps=10 for quick refits)")
	fs.Float64Var(&c.rate, "rate", 60, "ingest rate in bags per second")
	fs.Float64Var(&c.labelFraction, "label-fraction", 0.5, "fraction of bags published with their labels (also sent to training)")
	fs.IntVar(&c.every, "every", 100, "refit after this many new labeled bags")
	fs.IntVar(&c.minBags, "min-bags", 80, "labeled bags needed for the first model")
	fs.IntVar(&c.annotators, "annotators", 2, "annotator instances")
	fs.IntVar(&c.rounds, "rounds", 2, "stream the dataset this many times (as new bag ids), so later rounds meet retrained models")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.BoolVar(&c.verbose, "verbose", false, "show the services' logs")
	media := fs.Bool("media", false, "stream photos instead of --data: segmented and featurized by the ingest, annotated region by region, a few drawn as PNGs (--pictures)")
	var mc mediaConfig
	fs.StringVar(&mc.photos, "media-data", DevPhotos, "with --media: photo manifest (JSON lines naming an \"image\") or its `folder` (its bags.jsonl); a relative path is taken from the repository's root")
	fs.StringVar(&mc.pictures, "pictures", filepath.Join(os.TempDir(), "mimlstream-demo-media"), "with --media: `folder` the annotated pictures are written to")
	fs.IntVar(&mc.drawn, "draw", 6, "with --media: annotated photos drawn into --pictures (0: none)")
	fs.IntVar(&mc.limit, "limit", 0, "with --media: stream only the first `n` photos of the manifest (0: all)")
	fs.StringVar(&mc.statusListen, "status-listen", "", "with --media: serve the status page, with its gallery of annotated photos, on this `address` during the run and after it until interrupted (empty: none)")
	if err := service.ParseFlags(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if *media {
		if c.kind == "orlr" {
			c.params = append(cli.StringList{"iters=20", "msteps=10"}, c.params...)
		}
		return runMedia(ctx, kinds, stdout, stderr, c, mc)
	}
	return run(ctx, kinds, stdout, stderr, c)
}

func run(ctx context.Context, kinds *models.Registry, stdout, stderr io.Writer, c config) error {
	ds, err := dataset.Load(c.data)
	if err != nil {
		return err
	}
	ds = ds.Densified() // the demo streams dense bags
	if !ds.HasInstanceLabels() {
		return fmt.Errorf("%s has no instance labels to measure accuracy against", c.data)
	}
	ds = replay(ds, c.rounds)

	inf, stopInfra, err := c.start(ctx, stdout, stderr, "demo")
	if err != nil {
		return err
	}
	defer stopInfra()
	env, kc, tel, rc := inf.env, inf.kc, inf.tel, inf.rc
	fmt.Fprintf(stdout, "signing  models signed with a fresh Ed25519 key; annotators refuse unsigned or badly signed ones\n")

	params := c.params
	if c.kind == "orlr" {
		// Quick refits for a demo: fewer EM iterations than the paper.
		params = append(cli.StringList{"iters=20", "msteps=10"}, c.params...)
	}
	rt, err := c.retrainer(ctx, kinds, inf, params)
	if err != nil {
		return err
	}
	defer rt.Close()
	fmt.Fprintf(stdout, "retrainer %s %v, refit every %d labeled bags (first at %d)\n", c.kind, rt.Params(), c.every, c.minBags)

	// Live quality of every labeled bag (the product's own measure,
	// printed in the summary beside the demo's).
	anns, closeAnns, err := c.startAnnotators(ctx, kinds, inf, func(a *annotate.Config) { a.QualitySampleRate = 1 })
	if err != nil {
		return err
	}
	defer closeAnns()
	fmt.Fprintf(stdout, "annotators %d in consumer group demo-annotators\n", c.annotators)

	icfg := ingest.DefaultConfig()
	icfg.Kafka, icfg.Telemetry = kc, tel
	icfg.LabelFraction = c.labelFraction
	// Instance labels travel as audit labels: the annotators' live
	// quality then includes instance accuracy (the models never see them).
	icfg.WithInstanceLabels = true
	in, err := ingest.New(ctx, env, icfg)
	if err != nil {
		return err
	}
	defer in.Close()
	pub := in.Publisher()

	// The services, the progress tails and the ingest run as one group: any
	// of them failing stops the others.
	prog := newProgress(ds)
	g, gctx, stopServices := inf.runServices(ctx, rt, anns, prog)
	defer stopServices()

	fmt.Fprintf(stdout, "ingest   %s: %d bags, %d instances, %d classes, at %.0f bags/s, %.0f%% labeled\n\n",
		ds.Name, len(ds.Bags), ds.NumInstances(), len(ds.Classes), c.rate, 100*c.labelFraction)
	start := time.Now()
	ingested := make(chan struct{})
	g.Go(func() error {
		if err := ingest.PublishBags(gctx, pub, ds, ds.Bags, c.rate, icfg.Batch, prog.setIngested); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		close(ingested)
		return nil
	})

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	ingestDone, finished := false, false
	var annotatedAt time.Time
	for !finished && gctx.Err() == nil {
		select {
		case <-ingested:
			ingestDone, ingested = true, nil
		case <-tick.C:
			prog.printLine(stdout, time.Since(start), anns)
			if ingestDone && prog.done() && annotatedAt.IsZero() {
				annotatedAt = time.Now()
			}
			// The summary lists the refits of every labeled bag: the
			// retrainer, slower than the annotators on a loaded machine,
			// is given until its window holds them all (its refits run
			// before it reads on, so those the data called for are done),
			// or retrainerGrace if some were refused.
			finished = !annotatedAt.IsZero() &&
				(rt.Retrainer().Len() >= pub.Stats().Labeled || time.Since(annotatedAt) > retrainerGrace)
		case <-gctx.Done():
		}
	}
	stopServices()
	err = g.Wait()
	switch {
	case finished:
		prog.summary(stdout, time.Since(start), pub.Stats(), rt.Retrainer().Results())
		liveSummary(ctx, stdout, rc, rt.Retrainer().Results())
		return err
	case ctx.Err() != nil:
		prog.summary(stdout, time.Since(start), pub.Stats(), rt.Retrainer().Results())
		return fmt.Errorf("demo did not finish: %w", ctx.Err())
	}
	return err
}

// retrainerGrace bounds how long the demo waits, once every bag is
// annotated, for the retrainer to read the last labeled ones.
const retrainerGrace = 15 * time.Second

// infra is what both demos run on: the services' Kafka and telemetry
// configurations with the demo's values, a broker (an embedded one unless
// --brokers names one), Redis under a fresh key prefix, and a fresh
// signing key pair (signing on, as in production: the retrainer signs
// every model, the annotators refuse any other).
type infra struct {
	env                   service.Env
	kc                    service.Kafka
	tel                   service.Telemetry
	sec                   kafkasec.Conn
	rc                    redisflag.Config
	prefix                string
	signingKey, verifyKey string
}

// start starts what infra holds, its key prefix named after name; stop
// undoes it.
func (c config) start(ctx context.Context, stdout, stderr io.Writer, name string) (in *infra, stop func(), err error) {
	var undo []func()
	stop = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	in = &infra{env: service.Env{Stdout: stdout, Stderr: stderr}, kc: service.DefaultKafka(), tel: service.DefaultTelemetry()}
	in.tel.LogLevel = "warn"
	if c.verbose {
		in.tel.LogLevel = "info"
	}
	in.kc.Brokers = c.brokers
	in.kc.Security = c.kafkaSec
	if in.sec, err = c.kafkaSec.Resolve(); err != nil {
		return nil, stop, cli.Usage(err)
	}
	if len(in.kc.Brokers) == 0 {
		b, err := broker.Start(broker.Options{Partitions: in.kc.Partitions, Topics: in.kc.Topics.All()})
		if err != nil {
			return nil, stop, err
		}
		undo = append(undo, b.Close)
		in.kc.Brokers = b.Addrs()
		fmt.Fprintf(stdout, "broker   embedded kfake at %s\n", strings.Join(in.kc.Brokers, ","))
	}
	rc, where, stopRedis, err := startRedis(ctx, c.redisURL)
	if err != nil {
		return nil, stop, err
	}
	undo = append(undo, stopRedis)
	in.rc = rc
	in.prefix = fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	in.rc.RegistryPrefix = in.prefix + ":models"
	fmt.Fprintf(stdout, "redis    %s (key prefix {%s:*})\n", where, in.prefix)
	keys, err := os.MkdirTemp("", "mimlstream-demo-keys-")
	if err != nil {
		return nil, stop, err
	}
	undo = append(undo, func() { os.RemoveAll(keys) })
	if in.signingKey, in.verifyKey, err = writeKeyPair(keys); err != nil {
		return nil, stop, err
	}
	return in, stop, nil
}

// outputs takes the annotations and dead letters a demo follows.
type outputs interface {
	addAnnotation(kafka.Message) error
	addDead()
}

var (
	_ outputs = (*progress)(nil)
	_ outputs = (*mediaProgress)(nil)
)

// runServices runs rt and anns, and tails of the annotations and dead
// letters into out, as one group under a context of ctx's (stop ends it):
// any of them failing stops the others.
func (inf *infra) runServices(ctx context.Context, rt *retrain.Service, anns []*annotate.Service, out outputs) (g *errgroup.Group, gctx context.Context, stop context.CancelFunc) {
	ctx, stop = context.WithCancel(ctx)
	g, gctx = errgroup.WithContext(ctx)
	g.Go(func() error { return rt.Run(gctx) })
	for _, a := range anns {
		g.Go(func() error { return a.Run(gctx) })
	}
	topics := inf.kc.Topics
	g.Go(func() error {
		return kafkaio.Tail(gctx, inf.kc.Brokers, inf.sec, topics.Annotations, out.addAnnotation)
	})
	g.Go(func() error {
		return kafkaio.Tail(gctx, inf.kc.Brokers, inf.sec, topics.DeadLetter, func(kafka.Message) error { out.addDead(); return nil })
	})
	return g, gctx, stop
}

// retrainer makes the demo's retrainer: on inf's broker and Redis,
// signing with its key, fitting c's kind with params every c.every
// labeled bags from c.minBags.
func (c config) retrainer(ctx context.Context, kinds *models.Registry, inf *infra, params cli.StringList) (*retrain.Service, error) {
	rcfg := retrain.DefaultServeConfig()
	rcfg.Kafka, rcfg.Redis, rcfg.Telemetry, rcfg.Listen = inf.kc, inf.rc, inf.tel, ""
	rcfg.Fit.SigningKey, rcfg.Fit.Kind, rcfg.Fit.Params = inf.signingKey, c.kind, params
	rcfg.Every, rcfg.MinBags = c.every, c.minBags
	return retrain.NewServe(ctx, inf.env, kinds, rcfg)
}

// startAnnotators makes c.annotators annotators in the consumer group
// demo-annotators, on inf's broker and Redis, verifying with its key,
// with a feature cache under its prefix; change, when not nil, adjusts
// each one's configuration. closeAll closes them.
func (c config) startAnnotators(ctx context.Context, kinds *models.Registry, inf *infra, change func(*annotate.Config)) (anns []*annotate.Service, closeAll func(), err error) {
	closeAll = func() {
		for i := len(anns) - 1; i >= 0; i-- {
			anns[i].Close()
		}
	}
	for i := range c.annotators {
		acfg := annotate.DefaultConfig()
		acfg.Kafka, acfg.Redis, acfg.Telemetry, acfg.Listen = inf.kc, inf.rc, inf.tel, ""
		acfg.VerifyKey = inf.verifyKey
		acfg.Name, acfg.Group = fmt.Sprintf("annotator-%d", i+1), "demo-annotators"
		acfg.Poll, acfg.SessionTimeout = time.Second, 6*time.Second
		acfg.CachePrefix, acfg.CacheMaxEntries = inf.prefix+":features", 100000
		if change != nil {
			change(&acfg)
		}
		a, err := annotate.New(ctx, inf.env, kinds, acfg)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		anns = append(anns, a)
	}
	return anns, closeAll, nil
}

// liveSummary prints the annotators' live quality of each version, read
// from Redis as any instance or the status page reads it.
func liveSummary(ctx context.Context, w io.Writer, rc redisflag.Config, refits []retrain.RefitResult) {
	o, err := rc.Options()
	if err != nil {
		return
	}
	rdb, err := redisflag.Dial(ctx, o)
	if err != nil {
		fmt.Fprintf(w, "  live quality: Redis unreachable: %v\n", err)
		return
	}
	defer rdb.Close()
	st := quality.NewStore(rdb, rc.RegistryPrefix, 0, 0)
	reg := featurestore.NewRegistry(rdb, rc.RegistryPrefix)
	for _, r := range refits {
		// The scores are kept under the version's ID (quality.KeyOf).
		meta, err := reg.Meta(ctx, r.Version)
		if err != nil {
			continue
		}
		rec, err := st.Total(ctx, quality.KeyOf(meta))
		if err != nil || rec.Bags == 0 {
			continue
		}
		fmt.Fprintf(w, "  live %-4s inductive on %3d labeled bags: Hamming loss %.4f, average precision %.3f, instance accuracy %.3f over %d audit instances\n",
			r.Version, rec.Bags, rec.HammingLoss(), rec.AveragePrecision(), rec.InstanceAccuracy(), rec.Instances)
	}
}

// replay returns the bags of ds repeated rounds times, the copies under new
// ids ("r2/..."), as a longer stream of the same distribution.
func replay(ds *mil.Dataset, rounds int) *mil.Dataset {
	if rounds <= 1 {
		return ds
	}
	out := *ds
	out.Bags = make([]mil.Bag, 0, rounds*len(ds.Bags))
	for r := range rounds {
		for _, b := range ds.Bags {
			if r > 0 {
				b.ID = fmt.Sprintf("r%d/%s", r+1, b.ID)
			}
			out.Bags = append(out.Bags, b)
		}
	}
	return &out
}

// writeKeyPair writes a fresh Ed25519 key pair into dir and returns the
// paths of the private and the public key.
func writeKeyPair(dir string) (priv, pub string, err error) {
	privPEM, pubPEM, err := signing.GenerateKey()
	if err != nil {
		return "", "", err
	}
	priv, pub = filepath.Join(dir, "signing-key.pem"), filepath.Join(dir, "verify-key.pem")
	if err := os.WriteFile(priv, privPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(pub, pubPEM, 0o644); err != nil {
		return "", "", err
	}
	return priv, pub, nil
}

// startRedis returns the settings of the given Redis after checking that it
// answers, or starts an in-process one; where says which, for the banner.
func startRedis(ctx context.Context, url string) (rc redisflag.Config, where string, stop func(), err error) {
	rc = redisflag.Default()
	if url == "" {
		addr, stop, err := redisserver.Start()
		if err != nil {
			return rc, "", nil, err
		}
		rc.Addr = addr
		return rc, "in-process (miniredis) at " + addr, stop, nil
	}
	rc.Addr = url
	o, err := rc.Options()
	if err != nil {
		return rc, "", nil, err
	}
	// Fail now rather than have every service wait for a Redis that is
	// not there.
	rdb, err := redisflag.Dial(ctx, o)
	if err != nil {
		return rc, "", nil, err
	}
	rdb.Close()
	return rc, o.Addr, func() {}, nil
}

// progress follows the annotations and scores them against the held-back
// instance labels.
type progress struct {
	truth map[string][]int
	total int

	mu        sync.Mutex
	ingested  int
	seen      map[string]bool
	dups      int
	dead      int
	versions  map[string]int
	right     map[string]int // by mode
	count     map[string]int
	recent    []bool // correctness of the last instances, for the rolling accuracy
	lastCount int
	lastAt    time.Duration
}

const rollingWindow = 500

func newProgress(ds *mil.Dataset) *progress {
	p := &progress{truth: map[string][]int{}, total: len(ds.Bags), seen: map[string]bool{}, versions: map[string]int{},
		right: map[string]int{}, count: map[string]int{}}
	for _, b := range ds.Bags {
		p.truth[b.ID] = b.InstanceLabels
	}
	return p
}

func (p *progress) setIngested(n int) {
	p.mu.Lock()
	p.ingested = n
	p.mu.Unlock()
}

func (p *progress) addDead() {
	p.mu.Lock()
	p.dead++
	p.mu.Unlock()
}

func (p *progress) addAnnotation(m kafka.Message) error {
	var a wire.AnnotationMessage
	if err := json.Unmarshal(m.Value, &a); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[a.BagID] {
		p.dups++ // at-least-once: a redelivered bag, deduplicated by id
		return nil
	}
	p.seen[a.BagID] = true
	p.versions[a.ModelVersion]++
	for i, l := range p.truth[a.BagID] {
		ok := i < len(a.InstanceLabels) && a.InstanceLabels[i] == l
		p.count[a.Mode]++
		if ok {
			p.right[a.Mode]++
		}
		p.recent = append(p.recent, ok)
	}
	if len(p.recent) > rollingWindow {
		p.recent = p.recent[len(p.recent)-rollingWindow:]
	}
	return nil
}

func (p *progress) done() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)+p.dead >= p.total
}

func ratio(a, b int) float64 { return float64(a) / float64(max(b, 1)) }

func (p *progress) versionList() string {
	vs := make([]string, 0, len(p.versions))
	for v := range p.versions {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return len(vs[i]) < len(vs[j]) || (len(vs[i]) == len(vs[j]) && vs[i] < vs[j]) })
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%s:%d", v, p.versions[v])
	}
	return strings.Join(parts, " ")
}

func (p *progress) printLine(w io.Writer, elapsed time.Duration, anns []*annotate.Service) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.seen)
	rate := float64(n-p.lastCount) / (elapsed - p.lastAt).Seconds()
	p.lastCount, p.lastAt = n, elapsed
	right := 0
	for _, ok := range p.recent {
		if ok {
			right++
		}
	}
	serving := make([]string, len(anns))
	for i, a := range anns {
		serving[i] = a.Annotator().ModelVersion()
		if serving[i] == "" {
			serving[i] = "-"
		}
	}
	fmt.Fprintf(w, "%5.0fs  ingested %4d/%d  annotated %4d  %5.0f bags/s  dead %d  serving [%s]  rolling inst. acc %.3f (last %d)  by version {%s}\n",
		elapsed.Seconds(), p.ingested, p.total, n, rate, p.dead, strings.Join(serving, " "), ratio(right, len(p.recent)), len(p.recent), p.versionList())
}

func (p *progress) summary(w io.Writer, elapsed time.Duration, st ingest.IngestStats, refits []retrain.RefitResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(w, "\nsummary after %v\n", elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  ingested   %d bags (%d labeled, sent to training too)\n", st.Published, st.Labeled)
	fmt.Fprintf(w, "  annotated  %d distinct bags (%d redelivered duplicates dropped by id), %d dead letters\n", len(p.seen), p.dups, p.dead)
	for _, mode := range []string{string(models.Inductive), string(models.Transductive)} {
		fmt.Fprintf(w, "  instance accuracy %-12s %.3f over %d instances\n", mode, ratio(p.right[mode], p.count[mode]), p.count[mode])
	}
	fmt.Fprintf(w, "  bags per model version: %s\n", p.versionList())
	for _, r := range refits {
		promoted := "kept current"
		if r.Promoted {
			promoted = "promoted"
		}
		fmt.Fprintf(w, "  refit %-4s on %3d bags (held out %3d) in %6.2fs: %s (%s)\n", r.Version, r.TrainBags, r.HeldOutBags, r.FitTime.Seconds(), promoted, r.Reason)
	}
}

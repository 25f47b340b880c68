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
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/broker"
	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream"
	"github.com/mimlstream/mimlstream/internal/telemetry"
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
}

// Run runs the demo. kinds is the model catalog.
func Run(ctx context.Context, kinds *models.Registry, stdout, stderr io.Writer, args []string) error {
	fs := cli.NewFlagSet("demo", `Usage: demo [flags]

Runs the streaming annotation service end to end in one process: embedded
broker, Redis (in-process unless --redis or $REDIS_URL), ingest of a dataset
with part of it labeled, the retrainer and two annotators, printing live
progress and a summary.`, stderr)
	var c config
	fs.StringVar(&c.data, "data", "testdata/mscv2/MSCV2.mat", "dataset `file` to stream (needs instance labels for the accuracy)")
	fs.StringVar(&c.redisURL, "redis", os.Getenv("REDIS_URL"), "Redis `address` or URL (default $REDIS_URL; empty: in-process Redis)")
	fs.Var(&c.brokers, "brokers", "Kafka brokers (empty: embedded broker)")
	fs.StringVar(&c.kind, "model", "orlr", "model `kind` the retrainer fits")
	fs.Var(&c.params, "param", "model parameter `key=value` (repeatable; default iters=20, msteps=10 for a quick demo)")
	fs.Float64Var(&c.rate, "rate", 60, "ingest rate in bags per second")
	fs.Float64Var(&c.labelFraction, "label-fraction", 0.5, "fraction of bags published with their labels (also sent to training)")
	fs.IntVar(&c.every, "every", 100, "refit after this many new labeled bags")
	fs.IntVar(&c.minBags, "min-bags", 80, "labeled bags needed for the first model")
	fs.IntVar(&c.annotators, "annotators", 2, "annotator instances")
	fs.IntVar(&c.rounds, "rounds", 2, "stream the dataset this many times (as new bag ids), so later rounds meet retrained models")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.BoolVar(&c.verbose, "verbose", false, "show the services' logs")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return run(ctx, kinds, stdout, stderr, c)
}

func run(ctx context.Context, kinds *models.Registry, stdout, stderr io.Writer, c config) error {
	level := slog.LevelWarn
	if c.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ds, err := dataset.Load(c.data)
	if err != nil {
		return err
	}
	if !ds.HasInstanceLabels() {
		return fmt.Errorf("%s has no instance labels to measure accuracy against", c.data)
	}
	ds = replay(ds, c.rounds)
	params := models.Params{"iters": "20", "msteps": "10"}
	for _, kv := range c.params {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--param %q: want key=value", kv)
		}
		params[k] = v
	}

	topics := stream.DefaultTopics()
	brokers := []string(c.brokers)
	if len(brokers) == 0 {
		b, err := broker.Start(broker.Options{Partitions: 4, Topics: topics.All()})
		if err != nil {
			return err
		}
		defer b.Close()
		brokers = b.Addrs()
		fmt.Fprintf(stdout, "broker   embedded kfake at %s\n", strings.Join(brokers, ","))
	} else if err := broker.EnsureTopics(ctx, brokers, 4, topics.All()...); err != nil {
		return err
	}
	rdb, where, stopRedis, err := connectRedis(ctx, c.redisURL)
	if err != nil {
		return err
	}
	defer stopRedis()
	defer rdb.Close()
	prefix := fmt.Sprintf("demo-%d", time.Now().UnixNano())
	fmt.Fprintf(stdout, "redis    %s (key prefix {%s:*})\n", where, prefix)
	reg := featurestore.NewRegistry(rdb, prefix+":models")
	cache := featurestore.NewCache(rdb, prefix+":features", time.Hour, 100000)
	prov, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "demo"})
	if err != nil {
		return err
	}
	defer func() { _ = prov.Shutdown(context.WithoutCancel(ctx)) }()
	obs := stream.Observability{Tracer: prov.Tracer, Meter: prov.Meter, Propagator: prov.Propagator, Logger: log}

	var wg sync.WaitGroup
	svcCtx, stopServices := context.WithCancel(ctx)
	defer func() { stopServices(); wg.Wait() }()
	errs := make(chan error, 8)

	rt, err := stream.NewRetrainer(stream.RetrainerConfig{Brokers: brokers, Topic: topics.Train, Kinds: kinds, Kind: c.kind,
		Params: params, Seed: 1, Store: reg, Window: 5000, Every: c.every, MinBags: c.minBags, HoldOut: 0.2, Margin: 0.005,
		Warm: true, KeepVersions: 20, Obs: obs})
	if err != nil {
		return err
	}
	wg.Add(1)
	go func() { defer wg.Done(); errs <- rt.Run(svcCtx) }()
	fmt.Fprintf(stdout, "retrainer %s %v, refit every %d labeled bags (first at %d)\n", c.kind, params, c.every, c.minBags)

	var anns []*stream.Annotator
	for i := range c.annotators {
		a, err := stream.NewAnnotator(stream.AnnotatorConfig{Brokers: brokers, GroupID: "demo-annotators", Topics: topics,
			Name: fmt.Sprintf("annotator-%d", i+1), Kinds: kinds, Store: reg, Cache: cache, PollInterval: time.Second,
			SessionTimeout: 6 * time.Second, Obs: obs})
		if err != nil {
			return err
		}
		anns = append(anns, a)
		wg.Add(1)
		go func() { defer wg.Done(); errs <- a.Run(svcCtx) }()
	}
	fmt.Fprintf(stdout, "annotators %d in consumer group demo-annotators\n", c.annotators)

	pub, err := stream.NewPublisher(stream.PublisherConfig{Brokers: brokers, Topics: topics, LabelFraction: c.labelFraction, Seed: 1, Obs: obs})
	if err != nil {
		return err
	}
	defer pub.Close()
	prog := newProgress(ds)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- stream.Tail(svcCtx, brokers, topics.Annotations, prefix+"-progress", prog.addAnnotation)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- stream.Tail(svcCtx, brokers, topics.DeadLetter, prefix+"-progress-dlq", func(kafka.Message) error { prog.addDead(); return nil })
	}()

	fmt.Fprintf(stdout, "ingest   %s: %d bags, %d instances, %d classes, at %.0f bags/s, %.0f%% labeled\n\n",
		ds.Name, len(ds.Bags), ds.NumInstances(), len(ds.Classes), c.rate, 100*c.labelFraction)
	start := time.Now()
	ingested := make(chan error, 1)
	go func() { ingested <- ingest(ctx, pub, ds, c.rate, prog) }()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	ingestDone := false
	for {
		select {
		case err := <-ingested:
			if err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
			ingestDone = true
			ingested = nil
		case err := <-errs:
			if err != nil && ctx.Err() == nil {
				return err
			}
		case <-tick.C:
			prog.printLine(stdout, time.Since(start), anns)
			if ingestDone && prog.done() {
				stopServices()
				wg.Wait()
				prog.summary(stdout, time.Since(start), pub.Stats(), rt.Results())
				return nil
			}
		case <-ctx.Done():
			prog.summary(stdout, time.Since(start), pub.Stats(), rt.Results())
			return fmt.Errorf("demo did not finish: %w", ctx.Err())
		}
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

// connectRedis connects to the given Redis, or starts an in-process one.
func connectRedis(ctx context.Context, url string) (*redis.Client, string, func(), error) {
	if url == "" {
		addr, stop, err := featurestore.StartEmbedded()
		if err != nil {
			return nil, "", nil, err
		}
		rdb, err := featurestore.Connect(ctx, featurestore.Options{Addr: addr})
		if err != nil {
			stop()
			return nil, "", nil, err
		}
		return rdb, "in-process (miniredis) at " + addr, stop, nil
	}
	o := featurestore.Options{Addr: url}
	if strings.Contains(url, "://") {
		u, err := redis.ParseURL(url)
		if err != nil {
			return nil, "", nil, fmt.Errorf("redis url: %w", err)
		}
		o = featurestore.Options{Addr: u.Addr, Username: u.Username, Password: u.Password, DB: u.DB, TLS: u.TLSConfig != nil}
	}
	rdb, err := featurestore.Connect(ctx, o)
	if err != nil {
		return nil, "", nil, err
	}
	return rdb, o.Addr, func() {}, nil
}

// ingest publishes the dataset at rate bags/s in small batches.
func ingest(ctx context.Context, pub *stream.Publisher, ds *mil.Dataset, rate float64, prog *progress) error {
	batch := max(1, int(rate/10))
	start := time.Now()
	for i := 0; i < len(ds.Bags); i += batch {
		j := min(i+batch, len(ds.Bags))
		if _, err := pub.PublishDataset(ctx, ds, ds.Bags[i:j]); err != nil {
			return err
		}
		prog.setIngested(j)
		if rate > 0 {
			due := start.Add(time.Duration(float64(j) / rate * float64(time.Second)))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Until(due)):
			}
		}
	}
	return nil
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
	var a stream.AnnotationMessage
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

func (p *progress) printLine(w io.Writer, elapsed time.Duration, anns []*stream.Annotator) {
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
		serving[i] = a.ModelVersion()
		if serving[i] == "" {
			serving[i] = "-"
		}
	}
	fmt.Fprintf(w, "%5.0fs  ingested %4d/%d  annotated %4d  %5.0f bags/s  dead %d  serving [%s]  rolling inst. acc %.3f (last %d)  by version {%s}\n",
		elapsed.Seconds(), p.ingested, p.total, n, rate, p.dead, strings.Join(serving, " "), ratio(right, len(p.recent)), len(p.recent), p.versionList())
}

func (p *progress) summary(w io.Writer, elapsed time.Duration, st stream.IngestStats, refits []stream.RefitResult) {
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

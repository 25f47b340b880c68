package ingest

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/schollz/progressbar/v3"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/httpguard"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// Config is the settings of the ingest service, one field per flag.
type Config struct {
	Kafka               service.Kafka
	Telemetry           service.Telemetry
	Data, JSONL, Listen string
	LabelFraction, Rate float64
	Seed                int64
	WithInstanceLabels  bool
	MaxMessageBytes     int
	Batch, Limit        int
	Progress            bool
	// InFlight batches of a stream are published concurrently, with
	// Compression.
	InFlight    int
	Compression kafkaio.CompressionFlag
	Linger      time.Duration
	// WireFormat encodes the bags published.
	WireFormat wire.Format
	// The HTTP endpoint (--listen): bearer tokens, TLS, body limit,
	// concurrency bound and timeouts.
	AuthTokenFile   string
	TLSCert, TLSKey string
	MaxBodyBytes    int64
	MaxConcurrent   int
	// MinBodyRate and MinBodyRateGrace: HTTPConfig's.
	MinBodyRate      int64
	MinBodyRateGrace time.Duration
	Timeouts         httpguard.Timeouts
	// FeatureCache is the Redis of the feature cache, with its own
	// credentials and TLS (the --feature-cache-redis-* flags); an empty
	// address featurizes every photo and document.
	FeatureCache    redisflag.Config
	CachePrefix     string
	CacheTTL        time.Duration
	CacheMaxEntries int
	CacheMaxBytes   int64
}

// featureCacheFlag names the flags of the feature cache's Redis.
const featureCacheFlag = "feature-cache-redis"

// DefaultConfig returns the defaults of the ingest flags.
func DefaultConfig() Config {
	return Config{Kafka: service.DefaultKafka(), Telemetry: service.DefaultTelemetry(), LabelFraction: 1, Seed: 1,
		MaxMessageBytes: 1 << 20, Batch: 256, Progress: true, InFlight: 4, Compression: "none", Linger: kafkaio.DefaultLinger, WireFormat: wire.FormatJSON,
		MaxBodyBytes: 64 << 20, MaxConcurrent: 8, MinBodyRate: 1024, MinBodyRateGrace: 10 * time.Second,
		Timeouts:    httpguard.Timeouts{ReadHeader: 5 * time.Second, Read: 2 * time.Minute, Write: 3 * time.Minute, Idle: time.Minute},
		CachePrefix: "mimlstream:features", CacheTTL: 24 * time.Hour, CacheMaxEntries: 100_000, CacheMaxBytes: 256 << 20,
		FeatureCache: redisflag.Named(featureCacheFlag)}
}

func (c *Config) register(fs *flag.FlagSet) {
	c.Kafka.Register(fs)
	c.Telemetry.Register(fs)
	fs.StringVar(&c.Data, "data", c.Data, "dataset `file` to publish")
	fs.StringVar(&c.JSONL, "jsonl", c.JSONL, "wire-format JSON lines `file` (- for standard input)")
	fs.StringVar(&c.Listen, "listen", c.Listen, "serve POST /bags, GET /healthz, GET /readyz (Kafka reachable) and GET /metrics on this `address`")
	fs.Float64Var(&c.LabelFraction, "label-fraction", c.LabelFraction, "fraction of the labeled bags that keep their labels (the rest are published unlabeled)")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "seed of the label-fraction choice")
	fs.BoolVar(&c.WithInstanceLabels, "with-instance-labels", c.WithInstanceLabels, "publish ground-truth instance labels (held back by default)")
	fs.IntVar(&c.MaxMessageBytes, "max-message-bytes", c.MaxMessageBytes, "reject bags whose message (one line) is larger (0: no limit; a line of a POST body is then bounded by --max-body-bytes)")
	fs.StringVar(&c.AuthTokenFile, "auth-token-file", c.AuthTokenFile, "`file` of the bearer tokens POST /bags accepts, one a line (empty: no authentication, anyone who reaches --listen can publish)")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "PEM `file` of the certificate to serve --listen over TLS (with --tls-key)")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "PEM `file` of the private key of --tls-cert")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, "largest POST /bags body: reading stops beyond it and the answer is 413 with the lines processed so far (0: no total limit; memory stays bounded by --max-message-bytes per line either way)")
	fs.IntVar(&c.MaxConcurrent, "max-concurrent", c.MaxConcurrent, "POST /bags requests served at once; more are answered 503 with Retry-After (0: no bound)")
	fs.Int64Var(&c.MinBodyRate, "min-body-rate", c.MinBodyRate, "slowest a POST /bags body may be sent, in bytes a second on average after --min-body-rate-grace; a slower one is cut off (400), so trickling clients cannot hold every --max-concurrent slot until --read-timeout (0: no minimum)")
	fs.DurationVar(&c.MinBodyRateGrace, "min-body-rate-grace", c.MinBodyRateGrace, "time a POST /bags body may take before --min-body-rate applies")
	fs.DurationVar(&c.Timeouts.ReadHeader, "read-header-timeout", c.Timeouts.ReadHeader, "time a client has to send the request headers")
	fs.DurationVar(&c.Timeouts.Read, "read-timeout", c.Timeouts.Read, "time a client has to send a whole request, body included")
	fs.DurationVar(&c.Timeouts.Write, "write-timeout", c.Timeouts.Write, "time from the end of the request headers to the end of the answer (reading, publishing, answering)")
	fs.DurationVar(&c.Timeouts.Idle, "idle-timeout", c.Timeouts.Idle, "time an idle keep-alive connection stays open")
	fs.IntVar(&c.Batch, "batch", c.Batch, "bags per produce batch")
	fs.IntVar(&c.InFlight, "in-flight", c.InFlight, "produce batches of one stream (the file, standard input, an HTTP request) in flight at once")
	fs.Var(&c.Compression, "compression", "compression of the produced batches: none, gzip, snappy, lz4 or zstd")
	fs.DurationVar(&c.Linger, "linger", c.Linger, "how long a partial produce request waits for the records of other batches (Kafka's linger.ms): shorter for latency when traffic is light, longer for fewer requests when it is heavy")
	fs.Var(&c.WireFormat, "wire-format", "encoding of the bags published: json (schemas/bag.schema.json) or protobuf (schemas/mimlstream.proto, content-type application/x-protobuf; input given as JSON lines is checked as JSON, then sent in it)")
	fs.Float64Var(&c.Rate, "rate", c.Rate, "publish at most this many bags per second (0: as fast as acknowledged)")
	fs.IntVar(&c.Limit, "limit", c.Limit, "publish at most this many bags of --data (0: all)")
	fs.BoolVar(&c.Progress, "progress", c.Progress, "show a progress bar for files")
	c.FeatureCache.RegisterAs(fs, featureCacheFlag, "Redis `address` of the feature cache (host:port, a redis:// or rediss:// URL, or Redis Cluster nodes; credentials and TLS by the --feature-cache-redis-* flags): a photo or document already featurized, by any door, is not featurized again (empty: no cache)")
	fs.StringVar(&c.CachePrefix, "cache-prefix", c.CachePrefix, "key prefix of the feature cache (the annotators' default: one bound for both)")
	fs.DurationVar(&c.CacheTTL, "cache-ttl", c.CacheTTL, "feature cache entry TTL, renewed by each hit")
	fs.IntVar(&c.CacheMaxEntries, "cache-max-entries", c.CacheMaxEntries, "feature cache size bound (0: none)")
	fs.Int64Var(&c.CacheMaxBytes, "cache-max-bytes", c.CacheMaxBytes, "bytes of cached entries kept, the least recently used evicted first (0: no bound); keep it well below Redis's maxmemory when the Redis holds the model registry")
}

// checkSource requires exactly one source of bags, and HTTP settings only
// with --listen.
func (c Config) checkSource() error {
	n := 0
	for _, s := range []string{c.Data, c.JSONL, c.Listen} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return cli.Usagef("give exactly one of --data, --jsonl and --listen")
	}
	if c.Listen == "" && (c.AuthTokenFile != "" || c.TLSCert != "" || c.TLSKey != "") {
		return cli.Usagef("--auth-token-file, --tls-cert and --tls-key apply to --listen")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return cli.Usagef("--tls-cert and --tls-key go together")
	}
	if c.Listen != "" && c.MaxMessageBytes <= 0 && c.MaxBodyBytes <= 0 {
		return cli.Usagef("--max-message-bytes 0 and --max-body-bytes 0 together leave a POST body line without a bound; set one")
	}
	if c.MaxBodyBytes < 0 {
		return cli.Usagef("--max-body-bytes %d < 0", c.MaxBodyBytes)
	}
	return nil
}

// HTTPConfig returns the settings of the POST /bags handler, reading the
// token file; a token file that cannot be read or holds no token is a
// usage error.
func (c Config) HTTPConfig() (HTTPConfig, error) {
	h := HTTPConfig{MaxLineBytes: c.MaxMessageBytes, MaxBodyBytes: c.MaxBodyBytes, Batch: c.Batch, MaxConcurrent: c.MaxConcurrent,
		MinBodyRate: c.MinBodyRate, MinBodyRateGrace: c.MinBodyRateGrace}
	if h.MaxLineBytes <= 0 {
		h.MaxLineBytes = int(min(c.MaxBodyBytes, math.MaxInt32))
	}
	if c.AuthTokenFile != "" {
		t, err := httpguard.LoadTokens(c.AuthTokenFile)
		if err != nil {
			return h, cli.Usagef("--auth-token-file: %w", err)
		}
		h.Tokens = t
	}
	return h, nil
}

// Command is the ingest command: it publishes bags from a dataset file,
// from wire-format JSON lines (a file or standard input), or from HTTP
// POSTs, and prints a summary.
func Command(ctx context.Context, env service.Env, args []string) error {
	fs := cli.NewFlagSet("ingest", `Usage: ingest --brokers HOST:PORT (--data PATH | --jsonl PATH|- | --listen ADDR) [flags]

Validates bags and publishes them to the annotate topic; bags that keep their
labels (--label-fraction of the labeled ones) also go to the training topic.
--data reads any dataset format (.mat, .arff, .data, .jsonl, .csv), a
manifest of photos (JSON lines naming an "image" relative to its folder, with
optional "labels", as msrc_v2_dev's bags.jsonl) or a folder of photos (PNG,
JPEG, BMP, WebP; unlabeled): each photo is segmented into regions and
featurized, and its bag carries the photo's SHA-256 and the regions' masks;
a photo that cannot be read is dead-lettered with reason media (oversize
beyond 16 MiB); a manifest of documents (JSON lines with "text" or a "path"
relative to its folder, optional "labels", as text_dev's docs.jsonl) or a
folder of .txt files: each document is cut into passages (its paragraphs,
one of more than 400 words into windows of 50 words every 25) and
featurized (hashed stemmed words), and its bag carries the
document's SHA-256 and each passage's span in code points and bytes; a
document that is not UTF-8 is dead-lettered with reason media and the offset
of its first bad byte (oversize beyond 8 MiB);
--jsonl reads wire-format bag messages (schemas/bag.schema.json), one per line,
from a file or "-" for standard input; --listen serves POST /bags (JSON lines,
or one JSON document: a pretty-printed bag) until stopped. Invalid bags, and
lines over the size limit, go to the dead-letter topic; --jsonl names each
rejected line on stderr.

POST /bags answers with what happened to each line
(schemas/ingest-response.schema.json): 200 every line published; 422 some
lines rejected, the others published (resend only the rejected lines you
fix); and when the body was not processed to its end (413 beyond
--max-body-bytes, 503 when Kafka fails, 422 with complete false after 1000
rejected lines) the line to resend from. 415: not a JSON content type. With
--auth-token-file it requires "Authorization: Bearer TOKEN"; GET /healthz
needs no token.

POST /media takes one photo or document a request, under the same token and
bounds: the body is the image (Content-Type image/png, image/jpeg, image/bmp
or image/webp, at most 16 MiB) or the text (text/plain, UTF-8, cut into
passages as --data does), the query names it (id, default its SHA-256; uri),
and labels=a,b with classes=a,b,c label it over a vocabulary. 200: its bag
published; 422: refused with its reason (media: corrupt, unsupported, a
decompression bomb or not UTF-8; vocabulary) and dead-lettered; 415: neither
an image nor text.

--feature-cache-redis keeps featurized photos and documents in Redis by
featurizer and SHA-256, shared by every door and replica and by the
annotators' cache bound: media sent again are not featurized again
(metric mimlstream.ingest.media_cache, by medium and result). Its
credentials and TLS are the --feature-cache-redis-* flags, the set of the
annotator's --redis-* flags: the password from
--feature-cache-redis-password-file or
MIMLSTREAM_INGEST_FEATURE_CACHE_REDIS_PASSWORD, never logged; a Redis that
refuses them ends ingest at start with exit 1.`, env.Stderr)
	cfg := DefaultConfig()
	cfg.register(fs)
	if err := service.ParseFlags(fs, args); err != nil {
		return err
	}
	if err := cfg.Kafka.Check(); err != nil {
		return err
	}
	if err := cfg.checkSource(); err != nil {
		return err
	}
	s, err := New(ctx, env, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped during start-up
		}
		return err
	}
	defer s.Close()
	return s.Run(ctx)
}

// Service is a started ingest service: its publisher, logger and
// telemetry. The command and the demo build it with New.
type Service struct {
	cfg  Config
	http HTTPConfig
	env  service.Env
	rt   *service.Runtime
	pub  *Publisher
	rdb  redis.UniversalClient // the feature cache's; nil without one
}

// New starts the service (logger, telemetry, topics) and its publisher.
func New(ctx context.Context, env service.Env, cfg Config) (*Service, error) {
	hc, err := cfg.HTTPConfig()
	if err != nil {
		return nil, err
	}
	// Before Kafka is dialled: a bad cache setting is a usage error at
	// once, and one given without the address is not silently unused.
	if err := cfg.FeatureCache.CheckOptional(); err != nil {
		return nil, err
	}
	rt, err := service.Start(ctx, env, "ingest", cfg.Kafka, cfg.Telemetry)
	if err != nil {
		return nil, err
	}
	pc := PublisherConfig{Brokers: cfg.Kafka.Brokers, Security: rt.Kafka, Topics: cfg.Kafka.Topics, LabelFraction: cfg.LabelFraction,
		Seed: cfg.Seed, WithInstanceLabels: cfg.WithInstanceLabels, MaxMessageBytes: cfg.MaxMessageBytes,
		InFlight: cfg.InFlight, Compression: cfg.Compression.Codec(), Linger: cfg.Linger, Format: cfg.WireFormat, Obs: rt.Obs()}
	var rdb redis.UniversalClient
	if cfg.FeatureCache.Addr != "" {
		// Waits for Redis as the annotator does: started before it,
		// ingest must not exit; refused credentials end it at once
		// (redisflag.ErrAuth).
		if rdb, err = cfg.FeatureCache.Connect(ctx, rt.Log); err != nil {
			rt.Close()
			return nil, err
		}
		pc.MediaCache = featurecache.New(rdb, cfg.CachePrefix, cfg.CacheTTL, cfg.CacheMaxEntries).WithMaxBytes(cfg.CacheMaxBytes)
	}
	pub, err := NewPublisher(pc)
	if err != nil {
		if rdb != nil {
			rdb.Close()
		}
		rt.Close()
		return nil, err
	}
	// The topics' message size limit, learnt now under the service's
	// context, not by the first publish.
	if err := pub.Start(ctx); err != nil {
		rt.Log.Warn("the cluster does not report the topics' max.message.bytes; asking again at the first publish", "err", err)
	}
	hc.Metrics = rt.Telemetry.MetricsHandler
	brokers, conn := cfg.Kafka.Brokers, rt.Kafka
	hc.Ready = func(ctx context.Context) error { return conn.Check(ctx, brokers, 2*time.Second) }
	return &Service{cfg: cfg, http: hc, env: env, rt: rt, pub: pub, rdb: rdb}, nil
}

// Publisher returns the service's publisher.
func (s *Service) Publisher() *Publisher { return s.pub }

// Close flushes and closes the publisher, the feature cache's client and
// the telemetry.
func (s *Service) Close() {
	if err := s.pub.Close(); err != nil {
		s.rt.Log.Warn("close publisher", "err", err)
	}
	if s.rdb != nil {
		_ = s.rdb.Close()
	}
	s.rt.Close()
}

// Run publishes from the configured source (--data, --jsonl, or --listen
// until ctx ends), then prints the summary on Stdout.
func (s *Service) Run(ctx context.Context) error {
	start := time.Now()
	var err error
	switch {
	case s.cfg.Data != "":
		err = service.Run(ctx, s.rt.Log, s.ingestDataset)
	case s.cfg.JSONL != "":
		err = service.Run(ctx, s.rt.Log, s.ingestJSONL)
	default:
		err = s.serveHTTP(ctx)
	}
	st := s.pub.Stats()
	if err == nil || st.Published > 0 || len(st.Rejected) > 0 {
		// A source that could not be read (ingest --data nope.mat) is
		// the error alone, not "published 0 bags" before it.
		printSummary(s.env.Stdout, st, time.Since(start))
	}
	return err
}

func printSummary(w io.Writer, s IngestStats, d time.Duration) {
	rej := 0
	for _, n := range s.Rejected {
		rej += n
	}
	fmt.Fprintf(w, "ingest: published %d bags (%d labeled, also to the training topic), rejected %d, in %v (%.0f bags/s)\n",
		s.Published, s.Labeled, rej, d.Round(time.Millisecond), float64(s.Published)/max(d.Seconds(), 1e-9))
	reasons := make([]string, 0, len(s.Rejected))
	for r := range s.Rejected {
		reasons = append(reasons, string(r))
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "  rejected %-20s %d\n", r, s.Rejected[wire.Reason(r)])
	}
}

// pacer spaces batches so the average rate stays at most rate bags/s.
type pacer struct {
	rate  float64
	start time.Time
	sent  int
}

func newPacer(rate float64) *pacer { return &pacer{rate: rate, start: time.Now()} }

// wait counts n more bags sent and waits until they are due.
func (p *pacer) wait(ctx context.Context, n int) error {
	p.sent += n
	if p.rate <= 0 {
		return nil
	}
	due := p.start.Add(time.Duration(float64(p.sent) / p.rate * float64(time.Second)))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(due)):
		return nil
	}
}

// PublishBags publishes bags of ds in order, in batches of at most batch
// bags, at most rate bags per second on average (0: as fast as they are
// acknowledged), with up to the publisher's InFlight batches in flight
// (the bags of one id in order all the same), and calls progress, when not
// nil, with the number of bags published (every bag before it
// acknowledged) as that grows. A paced stream uses batches of a tenth of a
// second at most, so it stays smooth. The ingest command's --data and the
// demo both publish through it.
func PublishBags(ctx context.Context, pub *Publisher, ds *mil.Dataset, bags []mil.Bag, rate float64, batch int, progress func(published int)) error {
	batch = max(1, batch)
	if rate > 0 {
		batch = max(1, min(batch, int(rate/10)))
	}
	p := newPacer(rate)
	fl := newFlights(pub.InFlight())
	done := newInOrder(progress)
	for i := 0; i < len(bags); i += batch {
		j := min(i+batch, len(bags))
		keys := make([]string, j-i)
		for k := range keys {
			keys[k] = bags[i+k].ID
		}
		err := fl.Go(ctx, keys, func() error {
			if _, err := pub.PublishDataset(ctx, ds, bags[i:j]); err != nil {
				return err
			}
			done.complete(i, j)
			return nil
		})
		if err == nil {
			err = p.wait(ctx, j-i)
		}
		if err != nil {
			if werr := fl.Wait(); werr != nil {
				return werr
			}
			return err
		}
	}
	return fl.Wait()
}

func (s *Service) ingestDataset(ctx context.Context) error {
	if st, err := os.Stat(s.cfg.Data); err == nil && st.IsDir() {
		if isDocumentFolder(s.cfg.Data) {
			return s.ingestDocuments(ctx, s.cfg.Data, true)
		}
		return s.ingestPhotos(ctx, s.cfg.Data, true)
	}
	if photobag.IsPhotoManifest(s.cfg.Data) {
		return s.ingestPhotos(ctx, s.cfg.Data, false)
	}
	if text.IsManifest(s.cfg.Data) {
		return s.ingestDocuments(ctx, s.cfg.Data, false)
	}
	ds, err := dataset.Load(s.cfg.Data)
	if err != nil {
		return err
	}
	// Sparse bags (MILL sparse, sparse ARFF) go out sparse: the wire has
	// an encoding for them, and densifying a text bag multiplies its size
	// by thousands.
	bags := ds.Bags
	if s.cfg.Limit > 0 && s.cfg.Limit < len(bags) {
		bags = bags[:s.cfg.Limit]
	}
	bar := newBar(s.env, s.cfg.Progress, len(bags), "publishing "+ds.Name)
	if err := PublishBags(ctx, s.pub, ds, bags, s.cfg.Rate, s.cfg.Batch, func(n int) { _ = bar.Set(n) }); err != nil {
		return err
	}
	_ = bar.Finish()
	return nil
}

func newBar(env service.Env, show bool, n int, what string) *progressbar.ProgressBar {
	if !show {
		return progressbar.DefaultSilent(int64(n), what)
	}
	bar := progressbar.NewOptions(n, progressbar.OptionSetWriter(env.Stderr), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("bags"),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionOnCompletion(func() { fmt.Fprintln(env.Stderr) }))
	// The bar's clock starts at its first render: rendered now, at 0, its
	// first tick's rate is over the time since publishing started, not
	// over the microseconds before that tick.
	_ = bar.RenderBlank()
	return bar
}

func (s *Service) ingestJSONL(ctx context.Context) error {
	env, f := s.env, s.cfg
	var r io.Reader = os.Stdin
	if env.Stdin != nil {
		r = env.Stdin
	}
	show := false
	total := -1
	if f.JSONL != "-" {
		fh, err := os.Open(f.JSONL)
		if err != nil {
			return err
		}
		defer fh.Close()
		r = fh
		if st, err := fh.Stat(); err == nil {
			total = int(st.Size())
			show = f.Progress
		}
	}
	var bar *progressbar.ProgressBar
	if show {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(env.Stderr), progressbar.OptionSetDescription("publishing "+f.JSONL),
			progressbar.OptionShowBytes(true), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionOnCompletion(func() { fmt.Fprintln(env.Stderr) }))
		_ = bar.RenderBlank() // the clock starts now, as newBar's
	} else {
		bar = progressbar.DefaultBytesSilent(-1, "")
	}
	sc := bufio.NewScanner(r)
	// A line longer than the message limit is still read whole, so it is
	// rejected as oversize rather than breaking the scan.
	sc.Buffer(make([]byte, 0, 1<<20), max(f.MaxMessageBytes*2, 64<<20))
	p := newPacer(f.Rate)
	fl := newFlights(s.pub.InFlight())
	var pending [][]byte
	var pendingLines []int
	// The rejected lines are named on stderr (the summary only counts
	// them): by line number, with the bag id when it could be read.
	var rmu sync.Mutex
	var rejected []LineRejection
	var ids []string
	nrejected := 0
	defer func() {
		rmu.Lock()
		defer rmu.Unlock()
		order := make([]int, len(rejected))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, b int) bool { return rejected[order[a]].Line < rejected[order[b]].Line })
		src := f.JSONL
		if src == "-" {
			src = "stdin"
		}
		for _, i := range order {
			x, id := rejected[i], ""
			if ids[i] != "" {
				id = fmt.Sprintf(" bag %q", ids[i])
			}
			fmt.Fprintf(env.Stderr, "ingest: %s:%d:%s rejected: %s\n", src, x.Line, id, x.Error)
		}
		if nrejected > len(rejected) {
			fmt.Fprintf(env.Stderr, "ingest: %s: %d more rejected lines not listed (the dead-letter topic has them all)\n", src, nrejected-len(rejected))
		}
	}()
	// stop reports the first error of a chunk in flight before err: it is
	// the cause of err when fl.Go refused the next chunk.
	stop := func(err error) error {
		if werr := fl.Wait(); werr != nil {
			return werr
		}
		return err
	}
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		chunk, lines := pending, pendingLines
		pending, pendingLines = nil, nil
		keys := make([]string, 0, len(chunk))
		for _, raw := range chunk {
			if id, ok := wire.BagID(raw); ok {
				keys = append(keys, id)
			}
		}
		if err := fl.Go(ctx, keys, func() error {
			_, rej, err := s.pub.PublishRaw(ctx, chunk)
			rmu.Lock()
			defer rmu.Unlock()
			for _, x := range rej {
				nrejected++
				if len(rejected) < maxRejectedLines {
					rejected = append(rejected, LineRejection{Line: lines[x.Index], Reason: x.Reason, Error: x.Error})
					ids = append(ids, x.ID)
				}
			}
			return err
		}); err != nil {
			return err
		}
		return p.wait(ctx, len(chunk))
	}
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		_ = bar.Add(len(sc.Bytes()) + 1)
		if len(line) == 0 {
			continue
		}
		pending = append(pending, append([]byte(nil), line...))
		pendingLines = append(pendingLines, n)
		if len(pending) >= max(1, f.Batch) {
			if err := flush(); err != nil {
				return stop(err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return stop(fmt.Errorf("read %s: %w", f.JSONL, err))
	}
	if err := flush(); err != nil {
		return stop(err)
	}
	if err := fl.Wait(); err != nil {
		return err
	}
	_ = bar.Finish()
	return nil
}

// serveHTTP binds --listen, then serves POST /bags until ctx ends.
func (s *Service) serveHTTP(ctx context.Context) error {
	s.rt.Log.Info("ingest endpoint", "listen", s.cfg.Listen, "tls", s.cfg.TLSCert != "", "auth", s.http.Tokens != nil,
		"max_body_bytes", s.http.MaxBodyBytes, "max_line_bytes", s.http.MaxLineBytes, "max_concurrent", s.http.MaxConcurrent)
	if s.http.Tokens == nil {
		s.rt.Log.Warn("POST /bags needs no credentials (no --auth-token-file): anyone who reaches " + s.cfg.Listen + " can publish")
	}
	return service.Run(ctx, s.rt.Log, nil, service.Server{Addr: s.cfg.Listen, Handler: Handler(s.pub, s.http, s.rt.Log),
		Timeouts: s.cfg.Timeouts, CertFile: s.cfg.TLSCert, KeyFile: s.cfg.TLSKey})
}

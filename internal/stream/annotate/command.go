package annotate

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/signing"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// Config is the settings of the annotator service, one field per flag.
type Config struct {
	Kafka     service.Kafka
	Redis     redisflag.Config
	Telemetry service.Telemetry
	// Name identifies the instance in annotations and logs; Group is the
	// consumer group; Listen the address of /healthz, /readyz and /metrics
	// (empty: none; loopback by default, as they are unauthenticated).
	Name, Group, Listen string
	// VerifyKey is the PEM file of the Ed25519 public key that model blobs
	// must be signed with (empty: signatures are not checked).
	VerifyKey          string
	Workers, BatchSize int
	MaxBatchBytes      int
	BatchWait, Poll    time.Duration
	// MaxInFlight batches between fetch and acknowledgement; outputs are
	// committed every CommitInterval.
	MaxInFlight    int
	CommitInterval time.Duration
	Compression    kafkaio.CompressionFlag
	Linger         time.Duration
	// WireFormat encodes the annotations (bags are read in either).
	WireFormat      wire.Format
	MaxMessageBytes int
	DrainTimeout    time.Duration
	SessionTimeout  time.Duration
	StartOffset     kafkaio.StartOffset
	// StallAfter is how long a batch's outputs may keep failing to be
	// written before /readyz reports the annotator stalled, and every
	// fetch to fail before /readyz reports it.
	StallAfter time.Duration
	// NoFeatureCache turns the Redis cache of mapped instances off.
	NoFeatureCache  bool
	CachePrefix     string
	CacheTTL        time.Duration
	CacheMaxEntries int
	CacheMaxBytes   int64
	CacheTimeout    time.Duration
	// CacheRedis, when its address is set, is a Redis for the feature
	// cache alone, with its own credentials and TLS (--cache-redis-*), so
	// the cache can never fill the registry's Redis.
	CacheRedis redisflag.Config
	// Live quality (package quality): the fraction of labeled bags scored,
	// the rolling window of the gauges, how often scores reach Redis, and
	// the shadow policy (ShadowMinBags 0: this instance never judges a
	// candidate).
	QualitySampleRate float64
	QualityWindow     time.Duration
	QualityInterval   time.Duration
	QualityBucket     time.Duration
	ShadowMinBags     int64
	ShadowMargin      float64
}

// cacheRedisFlag names the flags of the feature cache's own Redis.
const cacheRedisFlag = "cache-redis"

// DefaultConfig returns the defaults of the annotator flags.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	c := Config{Kafka: service.DefaultKafka(), Redis: redisflag.Default(), Telemetry: service.DefaultTelemetry(),
		Name: fmt.Sprintf("%s-%d", host, os.Getpid()), Group: "annotator", Listen: "127.0.0.1:8080", BatchSize: 64, MaxBatchBytes: DefaultMaxBatchBytes, CacheTimeout: DefaultCacheTimeout,
		BatchWait: 20 * time.Millisecond, MaxInFlight: 4, CommitInterval: 200 * time.Millisecond, Compression: "none", Linger: DefaultLinger, WireFormat: wire.FormatJSON, Poll: 5 * time.Second, MaxMessageBytes: 1 << 20, DrainTimeout: 15 * time.Second,
		SessionTimeout: 10 * time.Second, StallAfter: 30 * time.Second, CachePrefix: "mimlstream:features", CacheTTL: time.Hour, CacheMaxEntries: 1_000_000,
		CacheMaxBytes: 256 << 20, CacheRedis: redisflag.Named(cacheRedisFlag)}
	c.QualitySampleRate, c.QualityWindow, c.QualityInterval, c.QualityBucket = 0.25, 10*time.Minute, 2*time.Second, time.Minute
	c.ShadowMinBags, c.ShadowMargin = 200, 0.005
	return c
}

func (c *Config) register(fs *flag.FlagSet) {
	c.Kafka.Register(fs)
	c.Redis.Register(fs)
	c.Telemetry.Register(fs)
	fs.StringVar(&c.Name, "name", c.Name, "instance `name` written into annotations")
	fs.StringVar(&c.Group, "group", c.Group, "consumer group")
	fs.StringVar(&c.Listen, "listen", c.Listen, "HTTP `address` of /healthz, /readyz and /metrics, which need no credentials (empty: none; :8080 for all interfaces, as in a container)")
	fs.StringVar(&c.VerifyKey, "verify-key", c.VerifyKey, "PEM `file` of the Ed25519 public key models must be signed with (retrainer --signing-key); unsigned or badly signed models are refused (empty: signatures not checked)")
	fs.IntVar(&c.Workers, "workers", c.Workers, "annotation workers (0: all cores)")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "maximum bags per batch")
	fs.IntVar(&c.MaxBatchBytes, "max-batch-bytes", c.MaxBatchBytes, "a batch closes once its messages reach this many bytes, so the batches in flight hold about --max-in-flight times it however large the bags")
	fs.DurationVar(&c.BatchWait, "batch-wait", c.BatchWait, "at most this long a batch gathers bags while the annotation stage is busy with earlier batches (a batch goes out as soon as the stage is free: an idle annotator does not wait)")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", c.MaxInFlight, "batches annotated and written concurrently, between their fetch and the acknowledgement of their outputs")
	fs.DurationVar(&c.CommitInterval, "commit-interval", c.CommitInterval, "period of the offset commits (only of bags whose outputs, and those of every bag before them, are acknowledged)")
	fs.Var(&c.Compression, "compression", "compression of the outputs: none, gzip, snappy, lz4 or zstd")
	fs.DurationVar(&c.Linger, "linger", c.Linger, "how long a partial produce request of outputs waits for the records of other batches (Kafka's linger.ms): shorter for latency when traffic is light, longer for fewer requests when it is heavy")
	fs.Var(&c.WireFormat, "wire-format", "encoding of the annotations: json (schemas/annotation.schema.json) or protobuf (schemas/mimlstream.proto, content-type application/x-protobuf); bags are read in the format their content-type header names")
	fs.DurationVar(&c.Poll, "poll", c.Poll, "period of the registry check backing up promotion notifications")
	fs.IntVar(&c.MaxMessageBytes, "max-message-bytes", c.MaxMessageBytes, "dead-letter bag messages larger than this (0: no limit); outputs stay within it and within the max.message.bytes the broker reports (0: 1 MiB)")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "bound on finishing the batches in flight at shutdown")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", c.SessionTimeout, "consumer group session timeout")
	fs.Var(&c.StartOffset, "start-offset", "where the group starts on a partition it has no committed offset for (a new group): earliest (every bag the topic still holds) or latest (only bags written from now on); a group with committed offsets resumes from them")
	fs.DurationVar(&c.StallAfter, "stall-after", c.StallAfter, "report the annotator stalled (/readyz 503, an ERROR log, the stalled gauge) when a batch's outputs keep failing to be written this long; /readyz also answers 503 when every fetch from the input topic has failed this long")
	fs.BoolVar(&c.NoFeatureCache, "no-feature-cache", c.NoFeatureCache, "do not cache mapped instances in Redis")
	fs.StringVar(&c.CachePrefix, "cache-prefix", c.CachePrefix, "key prefix of the feature cache")
	fs.DurationVar(&c.CacheTTL, "cache-ttl", c.CacheTTL, "feature cache entry TTL")
	fs.IntVar(&c.CacheMaxEntries, "cache-max-entries", c.CacheMaxEntries, "feature cache size bound")
	c.CacheRedis.RegisterAs(fs, cacheRedisFlag, "Redis `address` of the feature cache alone (host:port, a redis:// or rediss:// URL, or Redis Cluster nodes; credentials and TLS by the --cache-redis-* flags), run with maxmemory and an eviction policy such as allkeys-lru, so the cache can never fill the registry's Redis (empty: the cache shares --redis)")
	fs.DurationVar(&c.CacheTimeout, "cache-timeout", c.CacheTimeout, "bound of one feature cache call: a Redis that does not answer in time (hung, overloaded) turns the cache off for 5 s and the mapping is computed instead")
	fs.Int64Var(&c.CacheMaxBytes, "cache-max-bytes", c.CacheMaxBytes, "bytes of cached feature vectors kept, the least recently used evicted first (0: no bound); the cache shares Redis with the model registry, so keep it well below Redis's maxmemory, or a full Redis (default policy noeviction) refuses the registry's writes")
	c.registerQuality(fs)
}

// Command is the annotator command: it runs the annotator service until ctx
// ends (SIGTERM), then drains and commits. kinds decodes the models
// (catalog.New() in the command).
func Command(ctx context.Context, env service.Env, kinds *models.Registry, args []string) error {
	fs := cli.NewFlagSet("annotator", `Usage: annotator --brokers HOST:PORT [flags]

Consumes bags from Kafka as a member of a consumer group, annotates them with
the model aliased "current" in the Redis registry (hot-swapped on promotion),
and writes annotations and dead letters. Serves /healthz, /readyz and
/metrics.`, env.Stderr)
	cfg := DefaultConfig()
	cfg.register(fs)
	if err := service.ParseFlags(fs, args); err != nil {
		return err
	}
	if err := cfg.Kafka.Check(); err != nil {
		return err
	}
	if r := cfg.QualitySampleRate; !(r >= 0 && r <= 1) {
		return cli.Usagef("--quality-sample-rate %v: want a fraction in [0, 1]", r)
	}
	s, err := New(ctx, env, kinds, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped during start-up (waiting for Redis, say)
		}
		return err
	}
	defer s.Close()
	return s.Run(ctx)
}

// Service is a started annotator service: the annotator, its Redis client,
// logger and telemetry. The command and the demo build it with New.
type Service struct {
	cfg Config
	rt  *service.Runtime
	rdb redis.UniversalClient
	// cacheRdb is the feature cache's own Redis client (--cache-redis),
	// nil when the cache shares rdb.
	cacheRdb redis.UniversalClient
	a        *Annotator
	// quality is nil when live quality is off.
	quality liveTracker
}

// New starts the service: logger, telemetry and topics, then Redis (waiting
// for it until ctx ends), then the annotator.
func New(ctx context.Context, env service.Env, kinds *models.Registry, cfg Config) (*Service, error) {
	// A malformed Redis address is a usage error, reported before any
	// connection is tried.
	if _, err := cfg.Redis.Options(); err != nil {
		return nil, err
	}
	if err := cfg.CacheRedis.CheckOptional(); err != nil {
		return nil, err
	}
	var regOpts []featurestore.RegistryOption
	if cfg.VerifyKey != "" {
		key, err := signing.LoadPublicKey(cfg.VerifyKey)
		if err != nil {
			return nil, cli.Usagef("--verify-key: %w", err)
		}
		regOpts = append(regOpts, featurestore.WithVerifyKey(key))
	}
	rt, err := service.Start(ctx, env, "annotator", cfg.Kafka, cfg.Telemetry, "name", cfg.Name)
	if err != nil {
		return nil, err
	}
	if cfg.VerifyKey != "" {
		rt.Log.Info("model signatures checked", "verify_key", cfg.VerifyKey)
	} else {
		rt.Log.Warn("model signatures not checked (no --verify-key): whoever can write to Redis can have this annotator serve a model")
	}
	rdb, err := cfg.Redis.Connect(ctx, rt.Log)
	if err != nil {
		rt.Close()
		return nil, err
	}
	// A refused current model (unsigned, badly signed, corrupt) is logged
	// at ERROR once per version and named on /readyz by the annotator,
	// which keeps serving the model it holds.
	var store ModelStore = featurestore.NewRegistry(rdb, cfg.Redis.RegistryPrefix, regOpts...)
	acfg := AnnotatorConfig{
		Brokers: cfg.Kafka.Brokers, Security: rt.Kafka, GroupID: cfg.Group, Topics: cfg.Kafka.Topics, Name: cfg.Name, Kinds: kinds,
		Store: store, Workers: cfg.Workers, BatchSize: cfg.BatchSize, MaxBatchBytes: cfg.MaxBatchBytes, BatchWait: cfg.BatchWait,
		PollInterval: cfg.Poll, MaxMessageBytes: cfg.MaxMessageBytes, DrainTimeout: cfg.DrainTimeout, SessionTimeout: cfg.SessionTimeout,
		StartOffset: cfg.StartOffset, StallAfter: cfg.StallAfter, MaxInFlight: cfg.MaxInFlight, CommitInterval: cfg.CommitInterval, Compression: cfg.Compression.Codec(), Linger: cfg.Linger,
		Format: cfg.WireFormat, Obs: rt.Obs(),
	}
	var cacheRdb redis.UniversalClient
	if !cfg.NoFeatureCache {
		crdb := rdb
		if cfg.CacheRedis.Addr != "" {
			if cacheRdb, err = cfg.CacheRedis.Connect(ctx, rt.Log.With("redis_role", "feature cache")); err != nil {
				rdb.Close()
				rt.Close()
				return nil, fmt.Errorf("feature cache: %w", err)
			}
			crdb = cacheRdb
		}
		acfg.CacheTimeout = cfg.CacheTimeout
		acfg.Cache = featurecache.New(crdb, cfg.CachePrefix, cfg.CacheTTL, cfg.CacheMaxEntries).WithMaxBytes(cfg.CacheMaxBytes)
	}
	closeRedis := func() {
		rdb.Close()
		if cacheRdb != nil {
			cacheRdb.Close()
		}
	}
	tracker, err := newLiveTracker(cfg, rdb, regOpts, kinds, rt.Obs())
	if err != nil {
		closeRedis()
		rt.Close()
		return nil, cli.Usagef("%w", err)
	}
	if tracker != nil {
		acfg.Quality = tracker
	}
	a, err := NewAnnotator(acfg)
	if err != nil {
		closeRedis()
		rt.Close()
		return nil, err
	}
	return &Service{cfg: cfg, rt: rt, rdb: rdb, cacheRdb: cacheRdb, a: a, quality: tracker}, nil
}

// Annotator returns the service's annotator.
func (s *Service) Annotator() *Annotator { return s.a }

// Run consumes until ctx ends and serves /healthz, /readyz and /metrics on
// the listen address, as one group (service.Run): the listener failing
// stops the consumer, the consumer failing or draining closes the listener.
func (s *Service) Run(ctx context.Context) error {
	work := s.a.Run
	if s.quality != nil {
		work = func(ctx context.Context) error {
			// The tracker outlives the annotator's drain, so the scores of
			// the last batch are written too.
			qctx, stop := context.WithCancel(context.WithoutCancel(ctx))
			done := make(chan struct{})
			go func() { defer close(done); _ = s.quality.Run(qctx) }()
			err := s.a.Run(ctx)
			stop()
			<-done
			return err
		}
	}
	return service.Run(ctx, s.rt.Log, work, service.Server{Addr: s.cfg.Listen, Handler: s.a.Handler(s.rt.Telemetry.MetricsHandler)})
}

// Close closes the Redis client and the telemetry.
func (s *Service) Close() {
	s.rdb.Close()
	if s.cacheRdb != nil {
		s.cacheRdb.Close()
	}
	s.rt.Close()
}

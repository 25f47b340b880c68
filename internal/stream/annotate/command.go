package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream"
)

// Env is what a service takes from its process; tests substitute theirs.
type Env struct {
	// Stdin feeds `ingest --jsonl -`; nil means os.Stdin.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Kinds decodes and fits models (catalog.New() in the commands).
	Kinds *models.Registry
}

func (e Env) logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: level}))
}

// RunAnnotator runs the annotator service until ctx ends (SIGTERM), then
// drains and commits. It returns flag.ErrHelp after printing help.
func RunAnnotator(ctx context.Context, env Env, args []string) error {
	fs := cli.NewFlagSet("annotator", `Usage: annotator --brokers HOST:PORT [flags]

Consumes bags from Kafka as a member of a consumer group, annotates them with
the model aliased "current" in the Redis registry (hot-swapped on promotion),
and writes annotations and dead letters. Serves /healthz, /readyz and
/metrics.`, env.Stderr)
	var kf kafkaFlags
	var rf redisFlags
	var tf telemetryFlags
	kf.register(fs)
	rf.register(fs)
	tf.register(fs)
	host, _ := os.Hostname()
	var (
		name        = fs.String("name", fmt.Sprintf("%s-%d", host, os.Getpid()), "instance `name` written into annotations")
		group       = fs.String("group", "annotator", "consumer group")
		listen      = fs.String("listen", ":8080", "HTTP `address` of /healthz, /readyz and /metrics (empty: none)")
		workers     = fs.Int("workers", 0, "annotation workers (0: all cores)")
		batch       = fs.Int("batch-size", 64, "maximum bags per batch")
		batchWait   = fs.Duration("batch-wait", 20*time.Millisecond, "how long a batch waits to fill")
		poll        = fs.Duration("poll", 5*time.Second, "period of the registry check backing up promotion notifications")
		maxBytes    = fs.Int("max-message-bytes", 1<<20, "dead-letter bag messages larger than this (0: no limit)")
		drain       = fs.Duration("drain-timeout", 15*time.Second, "bound on finishing the batch in flight at shutdown")
		session     = fs.Duration("session-timeout", 10*time.Second, "consumer group session timeout")
		noCache     = fs.Bool("no-feature-cache", false, "do not cache mapped instances in Redis")
		cachePrefix = fs.String("cache-prefix", "mimlstream:features", "key prefix of the feature cache")
		cacheTTL    = fs.Duration("cache-ttl", time.Hour, "feature cache entry TTL")
		cacheMax    = fs.Int("cache-max-entries", 1_000_000, "feature cache size bound")
	)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := kf.check(); err != nil {
		return err
	}
	log, prov, stop, err := start(ctx, env, "annotator", &kf, &tf, "name", *name)
	if err != nil {
		return err
	}
	defer stop()
	rdb, err := rf.connect(ctx, log)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer rdb.Close()
	cfg := stream.AnnotatorConfig{
		Brokers: kf.brokers, GroupID: *group, Topics: kf.topics, Name: *name, Kinds: env.Kinds,
		Store: featurestore.NewRegistry(rdb, rf.registryPrefix), Workers: *workers, BatchSize: *batch, BatchWait: *batchWait,
		PollInterval: *poll, MaxMessageBytes: *maxBytes, DrainTimeout: *drain, SessionTimeout: *session,
		Obs: observability(prov, log),
	}
	if !*noCache {
		cfg.Cache = featurestore.NewCache(rdb, *cachePrefix, *cacheTTL, *cacheMax)
	}
	a, err := stream.NewAnnotator(cfg)
	if err != nil {
		return err
	}
	stopHTTP, err := serveHTTP(*listen, a.Handler(prov.MetricsHandler), log)
	if err != nil {
		return err
	}
	defer stopHTTP()
	return a.Run(ctx)
}

// serveHTTP serves h on addr until the returned stop is called.
func serveHTTP(addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	log.Info("http listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

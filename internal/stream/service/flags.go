// Package service wires the pipeline's services (annotator, ingest,
// retrainer serve and fit) to their flags, Kafka, Redis, telemetry and
// HTTP endpoints. The commands are thin mains around it, and the
// end-to-end tests run the very same code in subprocesses.
package service

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/broker"
	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/stream"
	"github.com/mimlstream/mimlstream/internal/telemetry"
)

// kafkaFlags are the broker and topic flags shared by the services.
type kafkaFlags struct {
	brokers    cli.StringList
	partitions int
	topics     stream.Topics
	create     bool
}

func (k *kafkaFlags) register(fs *flag.FlagSet) {
	d := stream.DefaultTopics()
	fs.Var(&k.brokers, "brokers", "Kafka bootstrap `host:port` list (comma-separated or repeated)")
	fs.StringVar(&k.topics.Annotate, "topic-bags", d.Annotate, "topic of the bags to annotate")
	fs.StringVar(&k.topics.Train, "topic-train", d.Train, "topic of the weakly labeled bags for training")
	fs.StringVar(&k.topics.Annotations, "topic-annotations", d.Annotations, "topic of the annotations")
	fs.StringVar(&k.topics.DeadLetter, "topic-dead-letters", d.DeadLetter, "topic of the dead letters")
	fs.BoolVar(&k.create, "create-topics", true, "create missing topics at start-up")
	fs.IntVar(&k.partitions, "partitions", 4, "partitions of the topics created at start-up")
}

func (k *kafkaFlags) check() error {
	if len(k.brokers) == 0 {
		return fmt.Errorf("--brokers is required")
	}
	return nil
}

// redisFlags say how to reach the Redis holding the model registry and the
// feature cache.
type redisFlags struct {
	addr, username, password string
	db                       int
	tls, tlsInsecure         bool
	registryPrefix           string
}

func (r *redisFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.addr, "redis", "127.0.0.1:6379", "Redis `address` (host:port, or a redis:// or rediss:// URL)")
	fs.StringVar(&r.username, "redis-username", "", "Redis ACL user")
	fs.StringVar(&r.password, "redis-password", "", "Redis password")
	fs.IntVar(&r.db, "redis-db", 0, "Redis database number")
	fs.BoolVar(&r.tls, "redis-tls", false, "connect to Redis over TLS")
	fs.BoolVar(&r.tlsInsecure, "redis-tls-insecure", false, "skip Redis certificate verification (test clusters only)")
	fs.StringVar(&r.registryPrefix, "registry-prefix", "mimlstream:models", "key prefix of the model registry")
}

// options converts the flags, reading a URL when one is given.
func (r *redisFlags) options() (featurestore.Options, error) {
	o := featurestore.Options{Addr: r.addr, Username: r.username, Password: r.password, DB: r.db, TLS: r.tls, TLSInsecureSkipVerify: r.tlsInsecure}
	if strings.HasPrefix(r.addr, "redis://") || strings.HasPrefix(r.addr, "rediss://") {
		u, err := redis.ParseURL(r.addr)
		if err != nil {
			return o, fmt.Errorf("--redis: %w", err)
		}
		o.Addr, o.DB = u.Addr, u.DB
		if u.Username != "" {
			o.Username = u.Username
		}
		if u.Password != "" {
			o.Password = u.Password
		}
		o.TLS = o.TLS || u.TLSConfig != nil
		// A URL without a database path leaves --redis-db in force.
		if pu, err := url.Parse(r.addr); err == nil && strings.Trim(pu.Path, "/") == "" && r.db != 0 {
			o.DB = r.db
		}
	}
	return o, nil
}

// connect opens the Redis client, retrying until Redis answers or ctx ends:
// a service started before its Redis must wait, not exit.
func (r *redisFlags) connect(ctx context.Context, log *slog.Logger) (*redis.Client, error) {
	o, err := r.options()
	if err != nil {
		return nil, err
	}
	backoff := 200 * time.Millisecond
	for {
		rdb, err := featurestore.Connect(ctx, o)
		if err == nil {
			return rdb, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connect to redis: %w", err)
		}
		log.Warn("redis unavailable; retrying", "addr", o.Addr, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to redis: %w", ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// telemetryFlags select the trace exporter.
type telemetryFlags struct {
	exporter, endpoint string
	insecure           bool
	logLevel           string
}

func (t *telemetryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.exporter, "trace-exporter", "none", "trace exporter: none, stdout or otlp")
	fs.StringVar(&t.endpoint, "otlp-endpoint", "", "OTLP collector `host:port` (default from OTEL_EXPORTER_OTLP_ENDPOINT)")
	fs.BoolVar(&t.insecure, "otlp-insecure", false, "no TLS towards the OTLP collector")
	fs.StringVar(&t.logLevel, "log-level", "info", "log level: debug, info, warn, error")
}

func (t *telemetryFlags) setup(ctx context.Context, service string) (*telemetry.Providers, error) {
	return telemetry.Setup(ctx, telemetry.Config{ServiceName: service, Exporter: t.exporter, OTLPEndpoint: t.endpoint, Insecure: t.insecure})
}

func (t *telemetryFlags) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(t.logLevel)); err != nil {
		return 0, fmt.Errorf("--log-level: %w", err)
	}
	return l, nil
}

func observability(p *telemetry.Providers, log *slog.Logger) stream.Observability {
	return stream.Observability{Tracer: p.Tracer, Meter: p.Meter, Propagator: p.Propagator, Logger: log}
}

// start does what every service does once its flags are parsed: a logger at
// --log-level carrying the service name and logAttrs, telemetry, and the
// topics when --create-topics. stop flushes and closes the telemetry.
func start(ctx context.Context, env Env, service string, kf *kafkaFlags, tf *telemetryFlags, logAttrs ...any) (log *slog.Logger, prov *telemetry.Providers, stop func(), err error) {
	level, err := tf.level()
	if err != nil {
		return nil, nil, nil, err
	}
	log = env.logger(level).With(append([]any{"service", service}, logAttrs...)...)
	prov, err = tf.setup(ctx, service)
	if err != nil {
		return nil, nil, nil, err
	}
	stop = func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := prov.Shutdown(sctx); err != nil {
			log.Warn("telemetry shutdown", "err", err)
		}
	}
	if kf.create {
		if err := broker.EnsureTopics(ctx, kf.brokers, kf.partitions, kf.topics.All()...); err != nil {
			stop()
			return nil, nil, nil, err
		}
	}
	return log, prov, stop, nil
}

// parse parses the flags with the environment fallback.
func parse(fs *flag.FlagSet, args []string) error {
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

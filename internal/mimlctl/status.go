package mimlctl

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkaview"
	"github.com/mimlstream/mimlstream/internal/status"
	"github.com/mimlstream/mimlstream/internal/stream/quality"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
)

// StatusCommand is `mimlctl status`: the status page on --listen until
// SIGTERM.
func StatusCommand(ctx context.Context, env service.Env, args []string) error {
	fs := cli.NewFlagSet("mimlctl-status", `Usage: mimlctl status --brokers HOST:PORT [--retrainer URL] [flags]

Serves the status page on --listen: the registry's model versions on a
timeline (aliases, kind, dimension, training window, fit time, held-out
metrics), the annotators' throughput and lag per partition (the bags topic's
end offsets against the consumer group's committed offsets), dead letters by
reason (read from the dead-letter topic), the retrainer's refit history
(its /refits), and the live quality of each model version over time with the
shadow candidates' verdicts (read from Redis), and the latest annotated
photos (regions tinted by label, scores on hover) and documents (passages
highlighted by label), read from the annotations topic, their media from
--media-root. The page updates itself; /api/status is its JSON, /metrics
the lag per partition for Prometheus, /healthz and /readyz the probes.`, env.Stderr)
	k := service.DefaultKafka()
	k.Create = false
	k.CheckTimeout = 10 * time.Second
	k.Register(fs)
	rc := redisflag.Default()
	rc.Register(fs)
	t := service.DefaultTelemetry()
	fs.StringVar(&t.LogLevel, "log-level", t.LogLevel, "log level: debug, info, warn, error")
	listen := fs.String("listen", "127.0.0.1:8090", "HTTP `address` of the page")
	group := fs.String("group", "annotator", "the annotators' consumer group")
	retrainer := fs.String("retrainer", "", "base `URL` of the retrainer's HTTP listener, for its refit history (empty: none)")
	interval := fs.Duration("interval", 2*time.Second, "how often Redis, Kafka and the retrainer are read")
	history := fs.Int("history", 300, "polls kept for the plots")
	mediaRoot := fs.String("media-root", "", "`folder` the annotated photos and documents are read from for the gallery (their media URIs are relative to it; inline documents are found in its *.jsonl manifests; empty: the gallery lists annotations without their media)")
	galleryN := fs.Int("gallery", status.DefaultGallery, "latest annotated photos and documents shown")
	if err := service.ParseFlags(fs, args); err != nil {
		return err
	}
	if *retrainer != "" {
		u, err := url.Parse(*retrainer)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cli.Usagef("--retrainer %q: want an http:// or https:// URL", *retrainer)
		}
	}
	if *interval <= 0 || *history <= 0 || *galleryN <= 0 {
		return cli.Usagef("--interval, --history and --gallery must be positive")
	}
	if *listen == "" {
		return cli.Usagef("--listen is required")
	}
	level, err := t.Level()
	if err != nil {
		return err
	}
	if _, err := rc.Options(); err != nil {
		return err
	}
	log := env.Logger(level).With("service", "mimlctl-status")
	conn, err := k.Connect(ctx)
	if err != nil {
		return err
	}
	rdb, err := rc.Connect(ctx, log)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer rdb.Close()
	c, err := status.NewCollector(status.Config{
		Registry: featurestore.NewRegistry(rdb, rc.RegistryPrefix), Kafka: kafkaview.New(k.Brokers, conn),
		Topics: k.Topics, Group: *group, Retrainer: strings.TrimRight(*retrainer, "/"), Interval: *interval, History: *history, Log: log,
		Quality: quality.NewStore(rdb, rc.RegistryPrefix, 0, 0), MediaRoot: *mediaRoot, Gallery: *galleryN,
	})
	if err != nil {
		return err
	}
	return service.Run(ctx, log, c.Run, service.Server{Addr: *listen, Handler: status.Handler(c, *interval, log)})
}

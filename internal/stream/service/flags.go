package service

import (
	"context"
	"flag"
	"log/slog"
	"maps"
	"strconv"
	"time"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/telemetry"
)

// Kafka is the broker and topic settings shared by the services.
type Kafka struct {
	Brokers cli.StringList
	Topics  wire.Topics
	// Create makes Start create missing topics with Partitions partitions
	// and the configuration of TopicSpecs.
	Create     bool
	Partitions int
	// Retention is the retention.ms of the bags and dead-letters topics
	// created (0: the broker's default); AnnotationsRetention that of the
	// compacted annotations topic (0: compacted only, the latest annotation
	// of every bag kept).
	Retention            time.Duration
	AnnotationsRetention time.Duration
	// Security is TLS and SASL towards the brokers.
	Security kafkasec.Config
	// CheckTimeout bounds the connection check at start: a wrong password
	// or an untrusted certificate stops the command within it.
	CheckTimeout time.Duration
}

// DefaultKafka returns the defaults of the Kafka flags.
func DefaultKafka() Kafka {
	return Kafka{Topics: wire.DefaultTopics(), Create: true, Partitions: 4, Retention: 7 * 24 * time.Hour, CheckTimeout: 10 * time.Second}
}

// Register adds the Kafka flags to fs, with k's values as defaults.
func (k *Kafka) Register(fs *flag.FlagSet) {
	fs.Var(&k.Brokers, "brokers", "Kafka bootstrap `host:port` list (comma-separated or repeated)")
	fs.StringVar(&k.Topics.Annotate, "topic-bags", k.Topics.Annotate, "topic of the bags to annotate")
	fs.StringVar(&k.Topics.Train, "topic-train", k.Topics.Train, "topic of the weakly labeled bags for training")
	fs.StringVar(&k.Topics.Annotations, "topic-annotations", k.Topics.Annotations, "topic of the annotations")
	fs.StringVar(&k.Topics.DeadLetter, "topic-dead-letters", k.Topics.DeadLetter, "topic of the dead letters")
	fs.BoolVar(&k.Create, "create-topics", k.Create, "create missing topics at start-up")
	fs.IntVar(&k.Partitions, "partitions", k.Partitions, "partitions of the topics created at start-up")
	fs.DurationVar(&k.Retention, "retention", k.Retention, "retention of the bags and dead-letters topics created at start-up (0: the broker's default)")
	fs.DurationVar(&k.AnnotationsRetention, "annotations-retention", k.AnnotationsRetention, "retention of the annotations topic created at start-up, which is log-compacted (the latest annotation of each bag is kept); 0: compaction only, no time limit")
	k.Security.RegisterFlags(fs)
}

// RegisterConn adds only the flags that reach the brokers (--brokers and
// the security flags), for a command that reads a topic it names and
// creates nothing (mimlctl tail).
func (k *Kafka) RegisterConn(fs *flag.FlagSet) {
	fs.Var(&k.Brokers, "brokers", "Kafka bootstrap `host:port` list (comma-separated or repeated)")
	k.Security.RegisterFlags(fs)
}

// TopicSpecs are the pipeline's topics with the configuration they are
// created with. Outputs are keyed by bag id, so annotations are
// log-compacted: a redelivered bag's annotations collapse to the latest,
// and consumers that read the topic from the start see each bag once. The
// training topic is compacted too: the retrainer's window keeps the newest
// copy of each bag id, and compaction keeps what a rebuild needs without a
// time limit. Bags and dead letters are deleted after Retention.
func (k Kafka) TopicSpecs() []kafkaio.TopicSpec {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	deleted := map[string]string{"cleanup.policy": "delete"}
	if k.Retention > 0 {
		deleted["retention.ms"] = ms(k.Retention)
	}
	annotations := map[string]string{"cleanup.policy": "compact"}
	if k.AnnotationsRetention > 0 {
		annotations = map[string]string{"cleanup.policy": "compact,delete", "retention.ms": ms(k.AnnotationsRetention)}
	}
	return []kafkaio.TopicSpec{
		{Name: k.Topics.Annotate, Configs: deleted},
		{Name: k.Topics.Train, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: k.Topics.Annotations, Configs: annotations},
		{Name: k.Topics.DeadLetter, Configs: maps.Clone(deleted)},
	}
}

// Check reports a missing broker list as a usage error.
func (k Kafka) Check() error {
	if len(k.Brokers) == 0 {
		return cli.Usagef("--brokers is required")
	}
	if err := k.Security.Validate(); err != nil {
		return cli.Usage(err)
	}
	if k.Retention < 0 || k.AnnotationsRetention < 0 {
		return cli.Usagef("--retention and --annotations-retention must not be negative")
	}
	return nil
}

// Connect resolves the security settings (reading the CA, certificate and
// password files) and checks that every broker can be reached,
// authenticated and asked for metadata, so a misconfiguration stops the
// command at start with a message that says what is wrong.
func (k Kafka) Connect(ctx context.Context) (kafkasec.Conn, error) {
	if err := k.Check(); err != nil {
		return kafkasec.Conn{}, err
	}
	conn, err := k.Security.Resolve()
	if err != nil {
		return kafkasec.Conn{}, cli.Usage(err)
	}
	timeout := k.CheckTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if err := conn.Check(ctx, k.Brokers, timeout); err != nil {
		return kafkasec.Conn{}, err
	}
	return conn, nil
}

// Telemetry selects the trace exporter and the log level.
type Telemetry struct {
	Exporter, Endpoint string
	Insecure           bool
	LogLevel           string
}

// DefaultTelemetry returns the defaults of the telemetry flags.
func DefaultTelemetry() Telemetry { return Telemetry{Exporter: "none", LogLevel: "info"} }

// Register adds the telemetry flags to fs, with t's values as defaults.
func (t *Telemetry) Register(fs *flag.FlagSet) {
	fs.StringVar(&t.Exporter, "trace-exporter", t.Exporter, "trace exporter: none, stdout or otlp")
	fs.StringVar(&t.Endpoint, "otlp-endpoint", t.Endpoint, "OTLP collector `host:port` (default from OTEL_EXPORTER_OTLP_ENDPOINT)")
	fs.BoolVar(&t.Insecure, "otlp-insecure", t.Insecure, "no TLS towards the OTLP collector")
	fs.StringVar(&t.LogLevel, "log-level", t.LogLevel, "log level: debug, info, warn, error")
}

// Level parses the log level and checks the exporter's name; a bad one is
// a usage error.
func (t Telemetry) Level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(t.LogLevel)); err != nil {
		return 0, cli.Usagef("--log-level: %w", err)
	}
	switch t.Exporter {
	case "", telemetry.ExporterNone, telemetry.ExporterStdout, telemetry.ExporterOTLP:
	default:
		return 0, cli.Usagef("--trace-exporter %q: want %s, %s or %s", t.Exporter, telemetry.ExporterNone, telemetry.ExporterStdout, telemetry.ExporterOTLP)
	}
	return l, nil
}

// ParseFlags parses the flags with the environment fallback (cli.Parse)
// and refuses positional arguments. Errors other than flag.ErrHelp are
// usage errors.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("unexpected arguments %q", fs.Args())
	}
	return nil
}

// Runtime is what every service holds once started: its logger and its
// telemetry providers.
type Runtime struct {
	Log       *slog.Logger
	Telemetry *telemetry.Providers
	// Kafka is the checked, secured connection to the brokers.
	Kafka kafkasec.Conn
}

// Obs returns the observability handles of the runtime.
func (r *Runtime) Obs() Observability {
	return Observability{Tracer: r.Telemetry.Tracer, Meter: r.Telemetry.Meter, Propagator: r.Telemetry.Propagator, Logger: r.Log}
}

// Close flushes and stops the telemetry, within 5 s.
func (r *Runtime) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Telemetry.Shutdown(ctx); err != nil {
		r.Log.Warn("telemetry shutdown", "err", err)
	}
}

// Start does what every service does once its flags are parsed: a logger
// on env.Stderr at the log level carrying the service name and logAttrs,
// the telemetry providers, and the topics when k.Create. Close the runtime
// when done.
func Start(ctx context.Context, env Env, name string, k Kafka, t Telemetry, logAttrs ...any) (*Runtime, error) {
	level, err := t.Level()
	if err != nil {
		return nil, err
	}
	log := env.Logger(level).With(append([]any{"service", name}, logAttrs...)...)
	prov, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: name, Exporter: t.Exporter, OTLPEndpoint: t.Endpoint, Insecure: t.Insecure})
	if err != nil {
		return nil, err
	}
	conn, err := k.Connect(ctx)
	if err != nil {
		_ = prov.Shutdown(context.Background())
		return nil, err
	}
	log.Info("kafka connection checked", "brokers", []string(k.Brokers), "security", k.Security)
	rt := &Runtime{Log: log, Telemetry: prov, Kafka: conn}
	if k.Create {
		if err := kafkaio.EnsureTopicSpecs(ctx, k.Brokers, conn, k.Partitions, k.TopicSpecs()...); err != nil {
			rt.Close()
			return nil, err
		}
	}
	return rt, nil
}

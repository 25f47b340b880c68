package service

import (
	"context"
	"flag"
	"log/slog"
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
	// Create makes Start create missing topics with Partitions partitions.
	Create     bool
	Partitions int
	// Security is TLS and SASL towards the brokers.
	Security kafkasec.Config
	// CheckTimeout bounds the connection check at start: a wrong password
	// or an untrusted certificate stops the command within it.
	CheckTimeout time.Duration
}

// DefaultKafka returns the defaults of the Kafka flags.
func DefaultKafka() Kafka {
	return Kafka{Topics: wire.DefaultTopics(), Create: true, Partitions: 4, CheckTimeout: 10 * time.Second}
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
	k.Security.RegisterFlags(fs)
}

// Check reports a missing broker list as a usage error.
func (k Kafka) Check() error {
	if len(k.Brokers) == 0 {
		return cli.Usagef("--brokers is required")
	}
	if err := k.Security.Validate(); err != nil {
		return cli.Usage(err)
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
		if err := kafkaio.EnsureTopics(ctx, k.Brokers, conn, k.Partitions, k.Topics.All()...); err != nil {
			rt.Close()
			return nil, err
		}
	}
	return rt, nil
}

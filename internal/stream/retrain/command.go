package retrain

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/mediaset"
	"github.com/mimlstream/mimlstream/internal/media/tfidf"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/signing"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
)

// FitConfig is the model settings shared by serve and fit.
type FitConfig struct {
	Kind    string
	Params  cli.StringList // key=value
	Seed    int64
	Workers int
	// Subset and Prune set the parameters of the same names when > 0.
	Subset, Prune float64
	// SigningKey is the PEM file of the Ed25519 private key that signs
	// every stored model (empty: models are stored unsigned).
	SigningKey string
}

// DefaultFitConfig returns the defaults of the model flags.
func DefaultFitConfig() FitConfig { return FitConfig{Kind: "orlr", Seed: 1} }

func (f *FitConfig) register(fs *flag.FlagSet, kinds *models.Registry) {
	fs.StringVar(&f.Kind, "model", f.Kind, "model `kind` (known: "+strings.Join(kinds.Names(), ", ")+")")
	fs.Var(&f.Params, "param", "model parameter `key=value` (repeatable; `retrainer eval --list-params KIND` lists a kind's keys, types, ranges and defaults)")
	fs.Int64Var(&f.Seed, "seed", f.Seed, "seed of the fit")
	fs.IntVar(&f.Workers, "workers", f.Workers, "fit parallelism (0: all cores)")
	fs.Float64Var(&f.Subset, "subset", f.Subset, "stochastic-subset strategy: fraction of bags per EM iteration (sets --param subset; 0: model default)")
	fs.Float64Var(&f.Prune, "prune", f.Prune, "pruning strategy: fraction of the costliest bags dropped (sets --param prune; 0: model default)")
	fs.StringVar(&f.SigningKey, "signing-key", f.SigningKey, "PEM `file` of the Ed25519 private key that signs every stored model, for annotators run with --verify-key; the current model must then be signed by it too (empty: models stored unsigned)")
}

// registryOptions loads the signing key, if any; an unreadable key is a
// usage error.
func (f FitConfig) registryOptions() ([]featurestore.RegistryOption, error) {
	if f.SigningKey == "" {
		return nil, nil
	}
	key, err := signing.LoadPrivateKey(f.SigningKey)
	if err != nil {
		return nil, cli.Usagef("--signing-key: %w", err)
	}
	return []featurestore.RegistryOption{featurestore.WithSigningKey(key)}, nil
}

// ModelParams returns the parameters of the fit: --param pairs in order
// (a later one wins), then --subset and --prune. A malformed pair is a
// usage error.
func (f FitConfig) ModelParams() (models.Params, error) {
	p, err := models.ParseParams(f.Params)
	if err != nil {
		return nil, cli.Usage(err)
	}
	if f.Subset > 0 {
		p["subset"] = strconv.FormatFloat(f.Subset, 'g', -1, 64)
	}
	if f.Prune > 0 {
		p["prune"] = strconv.FormatFloat(f.Prune, 'g', -1, 64)
	}
	return p, nil
}

// check resolves the kind and the parameters; an unknown kind or a
// malformed parameter is a usage error.
func (f FitConfig) check(kinds *models.Registry) (models.Kind, models.Params, error) {
	params, err := f.ModelParams()
	if err != nil {
		return models.Kind{}, nil, err
	}
	kind, err := kinds.Lookup(f.Kind)
	if err != nil {
		return models.Kind{}, nil, cli.Usage(err)
	}
	// A misspelt or foreign key (--subset for a kind without subsets) is
	// refused here, before anything connects, with the valid keys listed.
	if err := kind.CheckParams(params); err != nil {
		return models.Kind{}, nil, cli.Usage(err)
	}
	return kind, params, nil
}

// ServeConfig is the settings of `retrainer serve`, one field per flag.
type ServeConfig struct {
	Kafka        service.Kafka
	Redis        redisflag.Config
	Telemetry    service.Telemetry
	Fit          FitConfig
	Window       int
	WindowBytes  int64
	Every        int
	Interval     time.Duration
	MinBags      int
	HoldOut      float64
	Margin       float64
	Warm         bool
	KeepVersions int
	// Shadow publishes fits as the candidate instead of promoting them.
	Shadow bool
	// FrozenAfter is how long the window may stay behind the topic
	// without moving, no refit running, before /readyz says it is frozen;
	// RefitTimeout bounds one refit.
	FrozenAfter, RefitTimeout time.Duration
	// Listen is the address of /healthz, /readyz, /refits and /metrics (empty:
	// none).
	Listen string
}

// DefaultServeConfig returns the defaults of the serve flags.
func DefaultServeConfig() ServeConfig {
	return ServeConfig{Kafka: service.DefaultKafka(), Redis: redisflag.Default(), Telemetry: service.DefaultTelemetry(),
		Fit: DefaultFitConfig(), Window: 5000, WindowBytes: DefaultWindowBytes, Every: 200, MinBags: 50, HoldOut: 0.2, Margin: 0.005, Warm: true,
		KeepVersions: 20, FrozenAfter: DefaultFrozenAfter, RefitTimeout: DefaultRefitTimeout, Listen: "127.0.0.1:8081"}
}

func (c *ServeConfig) register(fs *flag.FlagSet, kinds *models.Registry) {
	c.Kafka.Register(fs)
	c.Redis.Register(fs)
	c.Telemetry.Register(fs)
	c.Fit.register(fs, kinds)
	fs.IntVar(&c.Window, "window", c.Window, "bags kept in the training window")
	fs.Int64Var(&c.WindowBytes, "window-bytes", c.WindowBytes, "memory the training window's bags may hold, the oldest dropped first (the rebuild after a restart too); the fit's copies of the window come on top, so keep it well under the container's limit")
	fs.IntVar(&c.Every, "every", c.Every, "refit after this many new bags (0: off)")
	fs.DurationVar(&c.Interval, "interval", c.Interval, "refit on this schedule when new bags arrived (0: off)")
	fs.IntVar(&c.MinBags, "min-bags", c.MinBags, "smallest window worth fitting")
	fs.Float64Var(&c.HoldOut, "holdout", c.HoldOut, "fraction of the window held out for the promotion decision")
	fs.Float64Var(&c.Margin, "margin", c.Margin, "promote when the held-out Hamming loss is at most the current one plus this")
	fs.BoolVar(&c.Warm, "warm", c.Warm, "warm-start from the current model")
	fs.BoolVar(&c.Shadow, "shadow", c.Shadow, "publish a fit that passes the held-out comparison as the registry's candidate instead of promoting it: annotators run it in shadow and promote it on live quality (their --shadow-min-bags, --shadow-margin)")
	fs.IntVar(&c.KeepVersions, "keep-versions", c.KeepVersions, "after each refit, kept or promoted, delete registry versions older than the newest this many, except current, previous, candidate and the rollback history (0: keep all)")
	fs.DurationVar(&c.FrozenAfter, "frozen-after", c.FrozenAfter, "/readyz answers 503 (window frozen) when a partition of the training topic ends beyond the offset the retrainer reads and that offset has not moved for this long, no refit running (a refit holds the window still while it runs: --refit-timeout bounds it)")
	fs.DurationVar(&c.RefitTimeout, "refit-timeout", c.RefitTimeout, "a refit still running after this long is cancelled and counted as failed (/readyz says so until a refit succeeds), and the window moves on")
	fs.StringVar(&c.Listen, "listen", c.Listen, "HTTP `address` of /healthz, /readyz, /refits and /metrics, which need no credentials (empty: none; :8081 for all interfaces, as in a container)")
}

// ServeCommand is `retrainer serve`: follow the training topic, refit,
// evaluate and promote until ctx ends.
func ServeCommand(ctx context.Context, env service.Env, kinds *models.Registry, args []string) error {
	fs := cli.NewFlagSet("retrainer-serve", `Usage: retrainer serve --brokers HOST:PORT --model KIND [flags]

Follows the training topic into a bounded window (rebuilt from the topic on
restart), refits every --every new bags and/or every --interval, evaluates
the candidate against the current model on a held-out slice of the window,
and promotes it when its Hamming loss is not worse by more than --margin.`, env.Stderr)
	cfg := DefaultServeConfig()
	cfg.register(fs, kinds)
	if err := service.ParseFlags(fs, args); err != nil {
		return err
	}
	if err := cfg.Kafka.Check(); err != nil {
		return err
	}
	if _, _, err := cfg.Fit.check(kinds); err != nil {
		return err
	}
	s, err := NewServe(ctx, env, kinds, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped during start-up (waiting for Redis, say)
		}
		return err
	}
	defer s.Close()
	return s.Run(ctx)
}

// Service is a started retrainer service: the retrainer, its Redis client,
// logger and telemetry. The command and the demo build it with NewServe.
type Service struct {
	cfg    ServeConfig
	rt     *service.Runtime
	rdb    redis.UniversalClient
	r      *Retrainer
	params models.Params
}

// NewServe starts the service: logger, telemetry and topics, then Redis
// (waiting for it until ctx ends), then the retrainer.
func NewServe(ctx context.Context, env service.Env, kinds *models.Registry, cfg ServeConfig) (*Service, error) {
	_, params, err := cfg.Fit.check(kinds)
	if err != nil {
		return nil, err
	}
	if _, err := cfg.Redis.Options(); err != nil {
		return nil, err
	}
	regOpts, err := cfg.Fit.registryOptions()
	if err != nil {
		return nil, err
	}
	rt, err := service.Start(ctx, env, "retrainer", cfg.Kafka, cfg.Telemetry)
	if err != nil {
		return nil, err
	}
	if cfg.Fit.SigningKey != "" {
		rt.Log.Info("models signed", "signing_key", cfg.Fit.SigningKey)
	} else {
		rt.Log.Warn("models stored unsigned (no --signing-key): annotators run with --verify-key will refuse them")
	}
	rdb, err := cfg.Redis.Connect(ctx, rt.Log)
	if err != nil {
		rt.Close()
		return nil, err
	}
	r, err := NewRetrainer(RetrainerConfig{
		Brokers: cfg.Kafka.Brokers, Security: rt.Kafka, Topic: cfg.Kafka.Topics.Train, DeadLetterTopic: cfg.Kafka.Topics.DeadLetter, Kinds: kinds, Kind: cfg.Fit.Kind, Params: params, Seed: cfg.Fit.Seed,
		Store: featurestore.NewRegistry(rdb, cfg.Redis.RegistryPrefix, regOpts...), Window: cfg.Window, WindowBytes: cfg.WindowBytes, Every: cfg.Every, Interval: cfg.Interval,
		MinBags: cfg.MinBags, HoldOut: cfg.HoldOut, Margin: cfg.Margin, Warm: cfg.Warm, KeepVersions: cfg.KeepVersions,
		Shadow: cfg.Shadow, Workers: cfg.Fit.Workers, FrozenAfter: cfg.FrozenAfter, RefitTimeout: cfg.RefitTimeout, Obs: rt.Obs(),
	})
	if err != nil {
		rdb.Close()
		rt.Close()
		return nil, err
	}
	return &Service{cfg: cfg, rt: rt, rdb: rdb, r: r, params: params}, nil
}

// Retrainer returns the service's retrainer.
func (s *Service) Retrainer() *Retrainer { return s.r }

// Params returns the model parameters the retrainer fits with.
func (s *Service) Params() models.Params { return s.params }

// Handler serves /healthz, /readyz (200 once the window is rebuilt and
// followed, 503 with the reason before), /refits (the refits so far, as
// JSON) and /metrics.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ready, msg := s.r.Ready()
		if !ready {
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, msg)
	})
	mux.HandleFunc("GET /refits", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.r.Results())
	})
	mux.Handle("GET /metrics", s.rt.Telemetry.MetricsHandler)
	return mux
}

// Run follows, refits and promotes until ctx ends, and serves Handler on
// the listen address, as one group (service.Run).
func (s *Service) Run(ctx context.Context) error {
	return service.Run(ctx, s.rt.Log, s.r.Run, service.Server{Addr: s.cfg.Listen, Handler: s.Handler()})
}

// Close closes the Redis client and the telemetry.
func (s *Service) Close() {
	s.rdb.Close()
	s.rt.Close()
}

// FitCommand is `retrainer fit`: fit a model on a dataset file and publish
// it as a new version in the registry (and make it current with --promote).
func FitCommand(ctx context.Context, env service.Env, kinds *models.Registry, args []string) error {
	fs := cli.NewFlagSet("retrainer-fit", `Usage: retrainer fit --data PATH --model KIND [--promote] [flags]

Fits a model on a dataset file (any format the loaders read), or on a
manifest of photos or documents (JSON lines, as retrainer eval reads them)
featurized as ingest featurizes them, and stores it as a new immutable
version in the Redis model registry, with the featurizer it was fitted
through; --promote makes it the current version served by the annotators.`, env.Stderr)
	rc := redisflag.Default()
	ff := DefaultFitConfig()
	rc.Register(fs)
	ff.register(fs, kinds)
	data := fs.String("data", "", "dataset `file`")
	promote := fs.Bool("promote", false, "make the new version current; refused when its input dimension or classes differ from current's, unless --force")
	force := fs.Bool("force", false, "with --promote: promote even if the version's input dimension or classes differ from current's (annotators fed the current stream then dead-letter every bag)")
	if err := service.ParseFlags(fs, args); err != nil {
		return err
	}
	if *data == "" {
		return cli.Usagef("--data is required")
	}
	if *force && !*promote {
		return cli.Usagef("--force only applies with --promote")
	}
	kind, params, err := ff.check(kinds)
	if err != nil {
		return err
	}
	regOpts, err := ff.registryOptions()
	if err != nil {
		return err
	}
	log := env.Logger(0).With("service", "retrainer-fit")
	var ds *mil.Dataset
	var featurizer *media.Featurizer
	if mediaset.KindOf(*data) != mediaset.NotMedia {
		// Photos and documents are featurized as ingest featurizes them,
		// and the model records by which featurizer: annotators refuse
		// bags of another, promotion a model of another.
		set, err := mediaset.Load(ctx, *data, mediaset.Options{Workers: ff.Workers})
		if err != nil {
			return err
		}
		ds, featurizer = set.Data, set.Featurizer
		if name := tfidf.KindName(kind.Name, featurizer); name != kind.Name {
			// Documents: the kind's IDF-weighted form, as the
			// retrainer's refits fit it.
			if kind, err = kinds.Lookup(name); err != nil {
				return err
			}
		}
	} else if ds, err = dataset.Load(*data); err != nil {
		return err
	}
	o, err := rc.Options()
	if err != nil {
		return err
	}
	rdb, err := redisflag.Dial(ctx, o)
	if err != nil {
		return err
	}
	defer rdb.Close()
	reg := featurestore.NewRegistry(rdb, rc.RegistryPrefix, regOpts...)
	start := time.Now()
	m, err := kind.Fit(ctx, ds, models.FitOptions{Seed: ff.Seed, Params: params, Workers: ff.Workers})
	if err != nil {
		return fmt.Errorf("fit %s on %s: %w", ff.Kind, *data, err)
	}
	fitTime := time.Since(start)
	blob, err := models.Encode(m)
	if err != nil {
		return err
	}
	meta, err := reg.Put(ctx, blob, featurestore.VersionMeta{
		TrainingWindow: fmt.Sprintf("file %s (%d bags)", *data, len(ds.Bags)),
		Metrics:        map[string]float64{"train_bags": float64(len(ds.Bags)), "fit_seconds": fitTime.Seconds()},
		Featurizer:     featurizer,
	})
	if err != nil {
		return err
	}
	if *promote {
		var opts []featurestore.PromoteOption
		if *force {
			opts = append(opts, featurestore.Force())
		}
		if err := reg.Promote(ctx, meta.Version, opts...); err != nil {
			return fmt.Errorf("%w (%s is stored, not current)", err, meta.Version)
		}
	}
	log.Info("model stored", "version", meta.Version, "kind", meta.Kind, "promoted", *promote, "fit_time", fitTime.Round(time.Millisecond))
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		featurestore.VersionMeta
		Promoted bool `json:"promoted"`
	}{meta, *promote})
}

package service

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream"
)

// fitFlags are the model settings shared by serve and fit.
type fitFlags struct {
	kind          string
	params        cli.StringList
	seed          int64
	workers       int
	subset, prune float64
}

func (f *fitFlags) register(fs *flag.FlagSet, kinds *models.Registry) {
	fs.StringVar(&f.kind, "model", "orlr", "model `kind` (known: "+strings.Join(kinds.Names(), ", ")+")")
	fs.Var(&f.params, "param", "model parameter `key=value` (repeatable)")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the fit")
	fs.IntVar(&f.workers, "workers", 0, "fit parallelism (0: all cores)")
	fs.Float64Var(&f.subset, "subset", 0, "stochastic-subset strategy: fraction of bags per EM iteration (sets --param subset; 0: model default)")
	fs.Float64Var(&f.prune, "prune", 0, "pruning strategy: fraction of the costliest bags dropped (sets --param prune; 0: model default)")
}

func (f *fitFlags) modelParams() (models.Params, error) {
	p := models.Params{}
	for _, kv := range f.params {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--param %q: want key=value", kv)
		}
		p[k] = v
	}
	if f.subset > 0 {
		p["subset"] = strconv.FormatFloat(f.subset, 'g', -1, 64)
	}
	if f.prune > 0 {
		p["prune"] = strconv.FormatFloat(f.prune, 'g', -1, 64)
	}
	return p, nil
}

// RunRetrainerServe runs `retrainer serve`: follow the training topic,
// refit, evaluate and promote until ctx ends.
func RunRetrainerServe(ctx context.Context, env Env, args []string) error {
	fs := cli.NewFlagSet("retrainer-serve", `Usage: retrainer serve --brokers HOST:PORT --model KIND [flags]

Follows the training topic into a bounded window (rebuilt from the topic on
restart), refits every --every new bags and/or every --interval, evaluates
the candidate against the current model on a held-out slice of the window,
and promotes it when its Hamming loss is not worse by more than --margin.`, env.Stderr)
	var kf kafkaFlags
	var rf redisFlags
	var tf telemetryFlags
	var ff fitFlags
	kf.register(fs)
	rf.register(fs)
	tf.register(fs)
	ff.register(fs, env.Kinds)
	window := fs.Int("window", 5000, "bags kept in the training window")
	every := fs.Int("every", 200, "refit after this many new bags (0: off)")
	interval := fs.Duration("interval", 0, "refit on this schedule when new bags arrived (0: off)")
	minBags := fs.Int("min-bags", 50, "smallest window worth fitting")
	holdout := fs.Float64("holdout", 0.2, "fraction of the window held out for the promotion decision")
	margin := fs.Float64("margin", 0.005, "promote when the held-out Hamming loss is at most the current one plus this")
	warm := fs.Bool("warm", true, "warm-start from the current model")
	keep := fs.Int("keep-versions", 20, "after each promotion, delete registry versions older than the newest this many, except current, previous and the rollback history (0: keep all)")
	listen := fs.String("listen", ":8081", "HTTP `address` of /healthz and /metrics (empty: none)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := kf.check(); err != nil {
		return err
	}
	params, err := ff.modelParams()
	if err != nil {
		return err
	}
	log, prov, stop, err := start(ctx, env, "retrainer", &kf, &tf)
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
	r, err := stream.NewRetrainer(stream.RetrainerConfig{
		Brokers: kf.brokers, Topic: kf.topics.Train, Kinds: env.Kinds, Kind: ff.kind, Params: params, Seed: ff.seed,
		Store: featurestore.NewRegistry(rdb, rf.registryPrefix), Window: *window, Every: *every, Interval: *interval,
		MinBags: *minBags, HoldOut: *holdout, Margin: *margin, Warm: *warm, KeepVersions: *keep, Workers: ff.workers, Obs: observability(prov, log),
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /refits", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(r.Results())
	})
	mux.Handle("GET /metrics", prov.MetricsHandler)
	stopHTTP, err := serveHTTP(*listen, mux, log)
	if err != nil {
		return err
	}
	defer stopHTTP()
	return r.Run(ctx)
}

// RunFit runs `retrainer fit`: fit a model on a dataset file and publish it
// as a new version in the registry (and make it current with --promote).
func RunFit(ctx context.Context, env Env, args []string) error {
	fs := cli.NewFlagSet("retrainer-fit", `Usage: retrainer fit --data PATH --model KIND [--promote] [flags]

Fits a model on a dataset file (any format the loaders read) and stores it as
a new immutable version in the Redis model registry; --promote makes it the
current version served by the annotators.`, env.Stderr)
	var rf redisFlags
	var ff fitFlags
	rf.register(fs)
	ff.register(fs, env.Kinds)
	data := fs.String("data", "", "dataset `file`")
	promote := fs.Bool("promote", false, "make the new version current")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *data == "" {
		return errors.New("--data is required")
	}
	params, err := ff.modelParams()
	if err != nil {
		return err
	}
	kind, err := env.Kinds.Lookup(ff.kind)
	if err != nil {
		return err
	}
	log := env.logger(0).With("service", "retrainer-fit")
	ds, err := dataset.Load(*data)
	if err != nil {
		return err
	}
	o, err := rf.options()
	if err != nil {
		return err
	}
	rdb, err := featurestore.Connect(ctx, o)
	if err != nil {
		return err
	}
	defer rdb.Close()
	reg := featurestore.NewRegistry(rdb, rf.registryPrefix)
	start := time.Now()
	m, err := kind.Fit(ctx, ds, models.FitOptions{Seed: ff.seed, Params: params, Workers: ff.workers})
	if err != nil {
		return fmt.Errorf("fit %s on %s: %w", ff.kind, *data, err)
	}
	fitTime := time.Since(start)
	blob, err := models.Encode(m)
	if err != nil {
		return err
	}
	meta, err := reg.Put(ctx, blob, featurestore.VersionMeta{
		TrainingWindow: fmt.Sprintf("file %s (%d bags)", *data, len(ds.Bags)),
		Metrics:        map[string]float64{"train_bags": float64(len(ds.Bags)), "fit_seconds": fitTime.Seconds()},
	})
	if err != nil {
		return err
	}
	if *promote {
		if err := reg.Promote(ctx, meta.Version); err != nil {
			return err
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

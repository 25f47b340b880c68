package annotate

import (
	"context"
	"flag"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/quality"
	"github.com/mimlstream/mimlstream/internal/stream/service"
)

// registerQuality adds the live quality and shadow flags.
func (c *Config) registerQuality(fs *flag.FlagSet) {
	fs.Float64Var(&c.QualitySampleRate, "quality-sample-rate", c.QualitySampleRate, "fraction of labeled bags whose inductive prediction is scored against their labels (live quality; each costs one more annotation per model, current and candidate; 0: off)")
	fs.DurationVar(&c.QualityWindow, "quality-window", c.QualityWindow, "rolling window of the live quality gauges")
	fs.DurationVar(&c.QualityBucket, "quality-bucket", c.QualityBucket, "width of the time buckets live quality is kept in (the resolution of the status page's plot over time; all annotators should agree)")
	fs.DurationVar(&c.QualityInterval, "quality-interval", c.QualityInterval, "how often live quality scores are written to Redis and the candidate alias is checked")
	fs.Int64Var(&c.ShadowMinBags, "shadow-min-bags", c.ShadowMinBags, "labeled bags a shadow candidate must be scored on, beside current, before it is promoted or rejected (0: never judged here, mimlctl models promote decides)")
	fs.Float64Var(&c.ShadowMargin, "shadow-margin", c.ShadowMargin, "a candidate is promoted when no live measure is worse than current's by more than this")
}

// liveTracker is the live quality tracker (quality.Tracker) as the
// service uses it: the annotator's hook, and a loop run beside it.
type liveTracker interface {
	LiveScorer
	Run(ctx context.Context) error
}

var _ liveTracker = (*quality.Tracker)(nil)

// newLiveTracker returns the tracker the configuration asks for, or nil
// when live quality is off (sample rate 0).
func newLiveTracker(cfg Config, rdb redis.UniversalClient, regOpts []featurestore.RegistryOption, kinds *models.Registry, obs service.Observability) (liveTracker, error) {
	if cfg.QualitySampleRate <= 0 {
		return nil, nil
	}
	var policy *quality.Policy
	if cfg.ShadowMinBags > 0 {
		policy = &quality.Policy{MinBags: cfg.ShadowMinBags, Margin: cfg.ShadowMargin}
	}
	// The tracker reads the candidate with the same verification as the
	// current model.
	reg := featurestore.NewRegistry(rdb, cfg.Redis.RegistryPrefix, regOpts...)
	t, err := quality.New(quality.Config{Store: quality.NewStore(rdb, cfg.Redis.RegistryPrefix, cfg.QualityBucket, 0), Registry: reg, Kinds: kinds,
		SampleRate: cfg.QualitySampleRate, Window: cfg.QualityWindow, Interval: cfg.QualityInterval, Policy: policy, Obs: obs})
	if err != nil {
		return nil, err
	}
	return t, nil
}

package status

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/mimlstream/mimlstream/internal/stream/quality"
)

// Quality is what the collector reads of the live quality store
// (*quality.Store).
type Quality interface {
	Total(ctx context.Context, version string) (quality.Record, error)
	Series(ctx context.Context, version string, since time.Time) ([]quality.Point, error)
	Verdicts(ctx context.Context) ([]quality.Verdict, error)
}

var _ Quality = (*quality.Store)(nil)

// maxLiveVersions bounds the versions whose live quality is read: the
// newest ones, plus any an alias names.
const maxLiveVersions = 8

// LiveScores are live quality means; a nil mean is undefined (no bag or
// instance to average over), which JSON cannot carry as NaN.
type LiveScores struct {
	Bags             int64    `json:"bags"`
	Instances        int64    `json:"instances"`
	HammingLoss      *float64 `json:"hamming_loss,omitempty"`
	AveragePrecision *float64 `json:"average_precision,omitempty"`
	InstanceAccuracy *float64 `json:"instance_accuracy,omitempty"`
}

// LivePoint is one time bucket of a version's live quality.
type LivePoint struct {
	Start time.Time `json:"start"`
	LiveScores
}

// LiveVersion is the live quality of one model version: over all the
// labeled bags it was scored on, and per time bucket since LiveSince.
type LiveVersion struct {
	Version string      `json:"version"`
	Aliases []string    `json:"aliases"`
	Total   LiveScores  `json:"total"`
	Series  []LivePoint `json:"series"`
}

func defined(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

func scores(r quality.Record) LiveScores {
	return LiveScores{Bags: r.Bags, Instances: r.Instances, HammingLoss: defined(r.HammingLoss()),
		AveragePrecision: defined(r.AveragePrecision()), InstanceAccuracy: defined(r.InstanceAccuracy())}
}

// readLive reads the live quality of the newest versions and of every
// aliased one, and the latest shadow verdicts.
func (c *Collector) readLive(ctx context.Context, models []Model, now time.Time) ([]LiveVersion, []quality.Verdict, error) {
	var pick []Model
	for i := len(models) - 1; i >= 0; i-- {
		m := models[i]
		if len(pick) < maxLiveVersions || len(m.Aliases) > 0 {
			pick = append(pick, m)
		}
	}
	slices.Reverse(pick)
	var out []LiveVersion
	for _, m := range pick {
		// By the version's ID: a name reused after a registry reset must
		// not show another model's scores.
		key := quality.KeyOf(m.VersionMeta)
		tot, err := c.cfg.Quality.Total(ctx, key)
		if err != nil {
			return nil, nil, err
		}
		if tot.Bags == 0 {
			continue
		}
		series, err := c.cfg.Quality.Series(ctx, key, now.Add(-c.cfg.LiveSince))
		if err != nil {
			return nil, nil, err
		}
		lv := LiveVersion{Version: m.Version, Aliases: m.Aliases, Total: scores(tot), Series: make([]LivePoint, len(series))}
		for i, p := range series {
			lv.Series[i] = LivePoint{Start: p.Start, LiveScores: scores(p.Record)}
		}
		out = append(out, lv)
	}
	verdicts, err := c.cfg.Quality.Verdicts(ctx)
	if err != nil {
		return nil, nil, err
	}
	return out, verdicts, nil
}

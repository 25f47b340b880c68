package eval

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// Sweep parameters of the speed-up experiments of Pham et al. 2017 (§6.6,
// Figures 10 and 11). A model that supports them reads Params[param].
const (
	// SweepPrune removes the given fraction of training bags with the
	// largest n_b |Y_b| 2^|Y_b|; 0 is the unpruned baseline.
	SweepPrune = "prune"
	// SweepSubset samples the given fraction of bags per EM iteration; 1 is
	// the unsampled baseline.
	SweepSubset = "subset"
)

// SweepDefaults returns the paper's fractions for a sweep parameter and its
// baseline value (the run the speed-ups are measured against).
func SweepDefaults(param string) (values []float64, baseline float64, err error) {
	switch param {
	case SweepPrune:
		return []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}, 0, nil
	case SweepSubset:
		return []float64{1, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1}, 1, nil
	}
	return nil, 0, fmt.Errorf("unknown sweep %q (want %s or %s)", param, SweepPrune, SweepSubset)
}

// SweepPoint is the protocol run at one value of the swept parameter.
type SweepPoint struct {
	Value        float64 `json:"value"`
	Accuracy     Stat    `json:"accuracy"`
	TrainSeconds float64 `json:"train_seconds"`
	// SpeedUp is the baseline's total training time over this point's.
	SpeedUp float64 `json:"speed_up"`
	// TrainCPUSeconds and CPUSpeedUp are the same in process CPU time,
	// which the load of other processes does not inflate (absent where the
	// platform does not report it).
	TrainCPUSeconds float64 `json:"train_cpu_seconds,omitempty"`
	CPUSpeedUp      float64 `json:"cpu_speed_up,omitempty"`
	Report          *Report `json:"report"`
}

// SweepReport is the outcome of a sweep.
type SweepReport struct {
	Model    string  `json:"model"`
	Dataset  string  `json:"dataset"`
	Param    string  `json:"param"`
	Baseline float64 `json:"baseline"`
	// Metric names the measure in SweepPoint.Accuracy: instance accuracy when
	// the data has instance labels, else bag accuracy (binary MIL), else
	// average precision.
	Metric string       `json:"metric"`
	Points []SweepPoint `json:"points"`
}

// RunSweep runs the protocol once per value with Params[param] set to it, on
// the same folds with the same fit seeds, and measures each run's speed-up
// over the baseline value's run. The baseline is run first when values do
// not include it, so every speed-up compares runs measured in the same
// sweep; the fits of the different values are interleaved fold by fold (see
// runVariants) so that load changes on the machine do not bias the ratios.
func RunSweep(ctx context.Context, kind models.Kind, data *mil.Dataset, cfg Config, param string, values []float64, baseline float64) (*SweepReport, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("sweep %s: no values", param)
	}
	if !slices.Contains(values, baseline) {
		values = append([]float64{baseline}, values...)
	}
	variants := make([]models.Params, len(values))
	for i, v := range values {
		p := make(models.Params, len(cfg.Params)+1)
		for k, x := range cfg.Params {
			p[k] = x
		}
		p[param] = strconv.FormatFloat(v, 'g', -1, 64)
		variants[i] = p
	}
	reps, err := runVariants(ctx, kind, data, cfg, variants)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", param, err)
	}
	sr := &SweepReport{Model: kind.Name, Dataset: data.Name, Param: param, Baseline: baseline, Metric: primaryMetric(reps[0])}
	if sr.Metric == "" {
		return nil, fmt.Errorf("sweep %s: no accuracy measure is defined for this model and data", param)
	}
	base := reps[slices.Index(values, baseline)]
	for i, rep := range reps {
		acc := rep.Measure(sr.Metric)
		if acc == nil {
			return nil, fmt.Errorf("sweep %s=%v: %s undefined", param, values[i], sr.Metric)
		}
		p := SweepPoint{Value: values[i], Accuracy: *acc, TrainSeconds: rep.TrainSeconds,
			TrainCPUSeconds: rep.TrainCPUSeconds, Report: rep}
		if rep.TrainSeconds > 0 {
			p.SpeedUp = base.TrainSeconds / rep.TrainSeconds
		}
		if rep.TrainCPUSeconds > 0 {
			p.CPUSpeedUp = base.TrainCPUSeconds / rep.TrainCPUSeconds
		}
		sr.Points = append(sr.Points, p)
	}
	return sr, nil
}

func primaryMetric(rep *Report) string {
	for _, name := range []string{measure.InstanceAccuracy, measure.BagAccuracy, measure.AveragePrecision} {
		if rep.Measure(name) != nil {
			return name
		}
	}
	return ""
}

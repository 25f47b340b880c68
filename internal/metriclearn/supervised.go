package metriclearn

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"gonum.org/v1/gonum/mat"
)

// Instances flattens the instances of a data set, bag by bag.
func Instances(ds *mil.Dataset) [][]float64 {
	xs := make([][]float64, 0, ds.NumInstances())
	for i := range ds.Bags {
		xs = append(xs, ds.Bags[i].Instances...)
	}
	return xs
}

// FitSupervised trains supervised MLCA on the instances whose true class is
// known and builds a Model of the given kind name: the supervised setting
// (a) of Law et al. 2017, an upper bound for the weakly supervised metric.
func FitSupervised(ctx context.Context, kind string, train *mil.Dataset, opt models.FitOptions) (*Model, error) {
	cfg, err := ParseConfig(opt.Params)
	if err != nil {
		return nil, err
	}
	k := len(train.Classes)
	var xs [][]float64
	var labels []int
	assigned := make([][]int, len(train.Bags))
	for i := range train.Bags {
		b := &train.Bags[i]
		if err := b.Validate(train.Dim, k); err != nil {
			return nil, fmt.Errorf("%s fit: %w: %w", kind, models.ErrBadInput, err)
		}
		assigned[i] = make([]int, len(b.Instances))
		for j := range b.Instances {
			assigned[i][j] = mil.Unlabeled
			if j < len(b.InstanceLabels) && b.InstanceLabels[j] != mil.Unlabeled {
				assigned[i][j] = b.InstanceLabels[j]
				xs = append(xs, b.Instances[j])
				labels = append(labels, b.InstanceLabels[j])
			}
		}
	}
	if len(xs) == 0 {
		return nil, fmt.Errorf("%s fit: %w: supervised MLCA needs instance labels and %q has none", kind, ErrNoData, train.Name)
	}
	rng := rand.New(rand.NewPCG(uint64(opt.Seed), 0x6d6c6361))
	fm, err := NewFeatureMap(cfg.Kernel, cfg.Gamma, cfg.Landmarks, xs, rng)
	if err != nil {
		return nil, fmt.Errorf("%s fit: %w", kind, err)
	}
	phi := fm.Matrix(xs)
	if cfg.Center {
		fm.Center(phi)
	}
	var w *mat.Dense
	if cfg.Metric == MetricLearned {
		if w, err = TrainRidge(phi, labels, k, cfg.Ridge); err != nil {
			return nil, fmt.Errorf("%s fit: %w", kind, err)
		}
	}
	if opt.Progress != nil {
		opt.Progress(1, 2)
	}
	m, err := Build(ctx, kind, train, fm.Projection(w), assigned, cfg, opt.Params, opt.Workers)
	if err != nil {
		return nil, fmt.Errorf("%s fit: %w", kind, err)
	}
	if opt.Progress != nil {
		opt.Progress(2, 2)
	}
	return m, nil
}

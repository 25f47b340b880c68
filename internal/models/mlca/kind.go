package mlca

import (
	"context"

	"github.com/mimlstream/mimlstream/internal/metriclearn"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// KindName is the registry name of supervised MLCA.
const KindName = "mlca"

var _ models.Model = (*metriclearn.Model)(nil)

// Kind returns the "mlca" model kind: the metric learned in closed form from
// the ground-truth instance labels (the supervised setting (a) of Law et al.
// 2017, an upper bound for the weakly supervised models, like SLR for
// ORed-LR). Fitting needs a data set with instance labels.
func Kind() models.Kind {
	return models.Kind{
		Name:          KindName,
		Description:   "MLCA: closed-form Mahalanobis metric from instance labels (Law et al. 2016), centroid and citation-kNN annotation",
		InstanceLevel: true,
		Params:        metriclearn.ParamSpecs(),
		Fit: func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
			return Fit(ctx, train, opt)
		},
		Decode: func(meta models.Meta, state []byte) (models.Model, error) {
			return metriclearn.Decode(meta, state)
		},
	}
}

// Fit trains supervised MLCA on the instances whose true class is known.
func Fit(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (*metriclearn.Model, error) {
	return metriclearn.FitSupervised(ctx, KindName, train, opt)
}

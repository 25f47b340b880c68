package models

import (
	"context"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// FeatureMapper is an optional capability of a Model, for models whose
// per-instance work (kernel vectors against support vectors, say) is worth
// caching across bags and annotators. FeatureSpace names the mapping,
// including whatever the mapped vector depends on (the model version's
// support set), so entries of different models never mix; "" means there is
// nothing to cache. AnnotateMapped(b, mapped) must equal Annotate(b) when
// mapped[i] is MapInstance(b.Instances[i]).
//
// It is declared here, beside Model, so that a model can assert it
// (var _ models.FeatureMapper = (*Model)(nil)) and the annotator can test for
// it without either importing the other.
type FeatureMapper interface {
	FeatureSpace() string
	MapInstance(x []float64) ([]float64, error)
	AnnotateMapped(ctx context.Context, b *mil.Bag, mapped [][]float64, mode Mode) (Annotation, error)
}

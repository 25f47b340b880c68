package models

import (
	"context"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// dataFor returns the training data k's Fit can take: data itself when it
// is dense or k has a sparse path (Kind.Sparse), a densified copy
// otherwise, so that every kind trains on a sparse file, the ones without a
// sparse path at the cost of dim × instances memory. Wrap applies it in
// Fit: no caller does.
func (k Kind) dataFor(data *mil.Dataset) *mil.Dataset {
	if k.Sparse {
		return data
	}
	return data.Densified()
}

// bagFor returns b as k's models can annotate it: b itself when it is
// dense or k has a sparse path (Kind.Sparse), else a densified copy of
// dimension dim (b's other slices shared). Annotate of a kind without a
// sparse path reads Instances only: a sparse bag would look empty to it,
// which is why the models Wrap's kinds return apply it themselves.
func (k Kind) bagFor(b *mil.Bag, dim int) *mil.Bag {
	if k.Sparse || !b.IsSparse() {
		return b
	}
	d := *b
	d.Instances, d.Sparse = b.DenseInstances(dim), nil
	return &d
}

// densifying returns m as a Registry serves it: unchanged for a kind with
// a sparse path, else wrapped so that Annotate (and AnnotateMapped, when m
// is a FeatureMapper) gets a sparse bag densified by bagFor.
func (k Kind) densifying(m Model) Model {
	if k.Sparse || m == nil {
		return m
	}
	d := denseModel{Model: m, kind: k, dim: m.Meta().Dim}
	if fm, ok := m.(FeatureMapper); ok {
		return denseMapper{denseModel: d, mapper: fm}
	}
	return d
}

// Unwrap returns the model a Registry's kind fitted or decoded, without
// the wrapper that densifies sparse bags for it: what a kind's own code
// may type-assert (a warm start, say). Any other model is returned as it
// is.
func Unwrap(m Model) Model {
	if w, ok := m.(interface{ Unwrap() Model }); ok {
		return w.Unwrap()
	}
	return m
}

// denseModel is a model of a kind without a sparse path as a Registry
// serves it.
type denseModel struct {
	Model
	kind Kind
	dim  int
}

func (m denseModel) Annotate(ctx context.Context, b *mil.Bag, mode Mode) (Annotation, error) {
	return m.Model.Annotate(ctx, m.kind.bagFor(b, m.dim), mode)
}

// Unwrap returns the kind's own model.
func (m denseModel) Unwrap() Model { return m.Model }

// denseMapper is a denseModel whose model is a FeatureMapper: the
// capability stays visible to the annotator, and the bag AnnotateMapped
// gets is dense, as Annotate's is.
type denseMapper struct {
	denseModel
	mapper FeatureMapper
}

func (m denseMapper) FeatureSpace() string { return m.mapper.FeatureSpace() }

func (m denseMapper) MapInstance(x []float64) ([]float64, error) { return m.mapper.MapInstance(x) }

func (m denseMapper) AnnotateMapped(ctx context.Context, b *mil.Bag, mapped [][]float64, mode Mode) (Annotation, error) {
	return m.mapper.AnnotateMapped(ctx, m.kind.bagFor(b, m.dim), mapped, mode)
}

var (
	_ Model         = denseModel{}
	_ FeatureMapper = denseMapper{}
)

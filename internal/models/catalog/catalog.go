// Package catalog assembles the registry of every model kind the product
// ships. Commands build it once at start-up; nothing registers itself.
// TestConformance runs every kind listed here through the contract of
// package models, so adding a kind is one line here plus its package.
package catalog

import (
	"github.com/mimlstream/mimlstream/internal/media/tfidf"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/baseline"
	"github.com/mimlstream/mimlstream/internal/models/mier"
	"github.com/mimlstream/mimlstream/internal/models/mimlca"
	"github.com/mimlstream/mimlstream/internal/models/misvm"
	"github.com/mimlstream/mimlstream/internal/models/mlca"
	"github.com/mimlstream/mimlstream/internal/models/orlr"
	"github.com/mimlstream/mimlstream/internal/models/symil"
)

// New returns a registry of all model kinds, each also in its Weighted
// form (KIND+tfidf: fitted on documents' passages weighted by the IDF of
// its training passages, which the model keeps), the kind the retrainer
// fits on documents (tfidf.KindName) and an annotator must decode.
func New() *models.Registry {
	kinds := base()
	for _, k := range base() {
		kinds = append(kinds, tfidf.Weighted(k))
	}
	return models.NewRegistry(kinds...)
}

// base returns the model kinds.
func base() []models.Kind {
	return []models.Kind{
		orlr.Kind(),
		baseline.SLRKind(),
		baseline.DummyKind(),
		mimlca.Kind(),
		mlca.Kind(),
		symil.Kind(),
		misvm.MISVMKind(),
		misvm.MiSVMKind(),
		mier.Kind(),
	}
}

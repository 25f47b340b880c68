// Package evaltest provides a model kind with predictions fixed by the data,
// for testing evaluation code (package eval, the retrainer eval command)
// without a real learner, in the way net/http/httptest serves HTTP tests.
package evaltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// Fit records one call of the echo kind's Fit.
type Fit struct {
	Seed   int64
	Params models.Params
	Train  []string // IDs of the training bags
}

// Recorder collects the fits of a run, for tests of a protocol. It is safe
// for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	calls []Fit
}

// Fits returns the fits recorded so far, in call order.
func (r *Recorder) Fits() []Fit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

type echoModel struct {
	meta models.Meta
	fail string // bag ID whose annotation fails with ErrBadInput
}

// Echo returns the "echo" kind, whose predictions are fixed by the data so
// that tests can compute the expected measures in closed form. The echo
// model reads each instance's feature vector as its class scores (the
// dataset's Dim must equal its number of classes). An instance is labelled
// with its highest-scoring class, or in inductive mode with no class when
// every score is below 0.5; in transductive mode it takes its highest-scoring
// class of the bag label set. The bag scores are the per-class maxima over
// instances and the bag label set is the union of the instance labels. It
// refuses queries that leak the answer (instance labels, or bag labels in
// inductive mode).
//
// rec, when non-nil, records every fit; annotating the bag with ID fail
// returns an error wrapping models.ErrBadInput.
func Echo(rec *Recorder, fail string) models.Kind {
	return models.Kind{
		Name: "echo", InstanceLevel: true,
		Fit: func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if rec != nil {
				ids := make([]string, len(train.Bags))
				for i := range train.Bags {
					ids[i] = train.Bags[i].ID
				}
				rec.mu.Lock()
				rec.calls = append(rec.calls, Fit{Seed: opt.Seed, Params: opt.Params, Train: ids})
				rec.mu.Unlock()
			}
			return &echoModel{meta: models.Meta{Kind: "echo", Classes: train.Classes, Dim: train.Dim, InstanceLevel: true, Params: opt.Params}, fail: fail}, nil
		},
		Decode: func(meta models.Meta, _ []byte) (models.Model, error) {
			return &echoModel{meta: meta, fail: fail}, nil
		},
	}
}

func (m *echoModel) Meta() models.Meta             { return m.meta }
func (m *echoModel) MarshalState() ([]byte, error) { return []byte("{}"), nil }

func (m *echoModel) Annotate(ctx context.Context, b *mil.Bag, mode models.Mode) (models.Annotation, error) {
	if b.ID == m.fail {
		return models.Annotation{}, fmt.Errorf("%w: refused bag %q", models.ErrBadInput, b.ID)
	}
	if b.InstanceLabels != nil {
		return models.Annotation{}, errors.New("instance labels leaked into the query")
	}
	if mode == models.Inductive && b.Labels != nil {
		return models.Annotation{}, errors.New("bag labels leaked into an inductive query")
	}
	if mode == models.Transductive && b.Labels == nil {
		return models.Annotation{}, errors.New("transductive query without bag labels")
	}
	q := len(m.meta.Classes)
	a := models.Annotation{BagScores: make([]float64, q), BagLabels: []int{}}
	for c := range a.BagScores {
		a.BagScores[c] = -1
	}
	for i, x := range b.Instances {
		if len(x) != q {
			return models.Annotation{}, fmt.Errorf("%w: instance %d has dimension %d, want %d", models.ErrBadInput, i, len(x), q)
		}
		best := mil.Unlabeled
		for c, s := range x {
			a.BagScores[c] = max(a.BagScores[c], s)
			if mode == models.Transductive && !b.HasLabel(c) {
				continue
			}
			// The 0.5 threshold applies only when every class is a candidate.
			if (mode == models.Transductive || s >= 0.5) && (best == mil.Unlabeled || s > x[best]) {
				best = c
			}
		}
		a.InstanceLabels = append(a.InstanceLabels, best)
		if best != mil.Unlabeled && !slices.Contains(a.BagLabels, best) {
			a.BagLabels = append(a.BagLabels, best)
		}
	}
	slices.Sort(a.BagLabels)
	return a, nil
}

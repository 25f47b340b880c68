package eval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// The echo model reads each instance's feature vector as its class scores:
// an instance is labelled with its highest-scoring class, or in inductive
// mode with no class when every score is below 0.5; in transductive mode it
// takes its highest-scoring class of the bag label set. The bag scores are the per-class maxima over instances and the
// bag label set is the union of the instance labels. Its predictions are
// therefore fixed by the data, which lets tests compute the expected
// measures in closed form. It refuses queries that leak the answer.

type fitCall struct {
	seed   int64
	params models.Params
	train  []string // bag IDs
}

// recorder collects the fits of a run, for tests of the protocol itself.
type recorder struct {
	mu    sync.Mutex
	calls []fitCall
}

func (r *recorder) fits() []fitCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

type echoModel struct {
	meta models.Meta
	fail string // bag ID whose annotation fails with ErrBadInput
}

func echoKind(rec *recorder, fail string) models.Kind {
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
				rec.calls = append(rec.calls, fitCall{seed: opt.Seed, params: opt.Params, train: ids})
				rec.mu.Unlock()
			}
			return &echoModel{meta: models.Meta{Kind: "echo", Classes: train.Classes, Dim: train.Dim, InstanceLevel: true, Params: opt.Params}, fail: fail}, nil
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

package measure

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// Predict annotates bags with m on up to workers goroutines (<= 0 means
// GOMAXPROCS) and returns the predictions in bag order. Each query is a copy
// of the bag without its instance labels and, in inductive mode, without its
// label set, so no model can peek at the answer. Predictions are stored by
// index, so the result does not depend on scheduling; on failure the first
// failing bag in bag order is reported, and the remaining work is cancelled.
//
// It is the one annotate-and-score loop of the product: the evaluation
// harness, the retrainer's held-out check and model selection inside a fit
// all call it, then Score.
func Predict(ctx context.Context, m models.Model, bags []*mil.Bag, mode models.Mode, workers int) ([]Prediction, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(bags)))
	actx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Bags are scored over the data's classes, without the model's
	// implicit ones (models.Annotation.OverClasses).
	known := len(m.Meta().DataClasses())
	preds := make([]Prediction, len(bags))
	errs := make([]error, len(bags))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				b := bags[j]
				q := mil.Bag{ID: b.ID, Instances: b.Instances, Sparse: b.Sparse, Holistic: b.Holistic}
				if mode == models.Transductive {
					q.Labels = b.Labels
				}
				a, err := m.Annotate(actx, &q, mode)
				if err != nil {
					errs[j] = fmt.Errorf("annotate bag %q: %w", b.ID, err)
					cancel()
					continue
				}
				a = a.OverClasses(known)
				preds[j] = Prediction{InstanceLabels: a.InstanceLabels, BagLabels: a.BagLabels, BagScores: a.BagScores}
			}
		})
	}
feed:
	for j := range bags {
		select {
		case jobs <- j:
		case <-actx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return preds, nil
}

// Score measures predictions against the bags they were made for (preds[i]
// for truth[i]) over a vocabulary of q classes.
func Score(q int, truth []*mil.Bag, preds []Prediction) (Result, error) {
	if len(truth) != len(preds) {
		return Result{}, fmt.Errorf("%w: %d predictions for %d bags", ErrInvalid, len(preds), len(truth))
	}
	acc := NewAccumulator(q)
	for i, b := range truth {
		if err := acc.Add(b, preds[i]); err != nil {
			return Result{}, err
		}
	}
	return acc.Result(), nil
}

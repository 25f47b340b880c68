package texteval

import (
	"context"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// Inherit returns the inherit-the-bag's-labels baseline built on inner, a
// kind that learns from instance labels (slr): every training passage
// becomes one training instance per label of its bag, labeled with it, so
// the classifier sees the weak labels as if they were the passages' own.
// Annotation is inner's: the argmax over every class (inductive) or over
// the bag's labels (transductive). The passages' true labels are never
// read.
func Inherit(inner models.Kind) models.Kind {
	k := inner
	k.Name = "inherit+" + inner.Name
	k.Description = "every passage inherits each of its bag's labels, then " + inner.Name + " (the weak-label baseline)"
	k.Fit = func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
		return inner.Fit(ctx, inherited(train), opt)
	}
	return k
}

// inherited returns d with each instance repeated once per bag label, the
// repeats labeled with those labels.
func inherited(d *mil.Dataset) *mil.Dataset {
	out := &mil.Dataset{Name: d.Name, Classes: d.Classes, Dim: d.Dim, Bags: make([]mil.Bag, 0, len(d.Bags))}
	for _, b := range d.Bags {
		if len(b.Labels) == 0 {
			continue
		}
		nb := mil.Bag{ID: b.ID, Labels: b.Labels}
		for i := range b.Len() {
			for _, y := range b.Labels {
				if b.Sparse != nil {
					nb.Sparse = append(nb.Sparse, b.Sparse[i])
				} else {
					nb.Instances = append(nb.Instances, b.Instances[i])
				}
				nb.InstanceLabels = append(nb.InstanceLabels, y)
			}
		}
		out.Bags = append(out.Bags, nb)
	}
	return out
}

package eval

import (
	"context"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// Inherit returns the inherit-the-bag's-labels baseline built on inner, a
// kind that learns from instance labels (slr): every training instance
// becomes one training instance per label of its bag, labeled with it, so
// the classifier takes the weak labels as if they were the instances' own.
// Annotation is inner's: the best of every class (inductive) or of the
// bag's labels (transductive). The instances' true labels are never read.
func Inherit(inner models.Kind) models.Kind {
	k := inner
	k.Name = "inherit+" + inner.Name
	k.Description = "every instance inherits each of its bag's labels, then " + inner.Name + " (the weak-label baseline)"
	k.Fit = func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
		return inner.Fit(ctx, Inherited(train), opt)
	}
	return k
}

// Inherited returns d with each instance repeated once per label of its
// bag, the repeats labeled with those labels; unlabeled bags and bags with
// an empty label set are left out (they give no instance a label).
func Inherited(d *mil.Dataset) *mil.Dataset {
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

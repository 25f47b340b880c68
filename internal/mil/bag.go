// Package mil holds the data model shared by every part of the pipeline: a bag
// of feature vectors with an optional weak (bag-level) label set, and a dataset
// of bags over a fixed class vocabulary.
package mil

import (
	"errors"
	"fmt"
	"math"
)

// Unlabeled marks an instance whose class is not known.
const Unlabeled = -1

// Bag is one multi-instance example: an image with its regions, a recording
// with its syllables. Instances are rows; all rows have the dataset's dimension.
type Bag struct {
	ID        string      `json:"id"`
	Instances [][]float64 `json:"instances"`
	// Sparse, when non-nil, holds the instances in compressed form
	// instead of Instances (which is then nil): text bags, whose dense
	// rows would be almost all zeros. Len and DenseInstances read either
	// form.
	Sparse []SparseVec `json:"sparse,omitempty"`
	// Labels is the bag label set (class indices, ascending, no duplicates).
	// nil means the bag is unlabeled; an empty non-nil slice means "labeled,
	// with no known class" (a negative bag in binary MIL).
	Labels []int `json:"labels,omitempty"`
	// InstanceLabels holds ground-truth instance classes when a dataset has
	// them (MSCV2, Letter Frost); used for evaluation only, never for
	// training the weakly supervised models. Unlabeled marks unknown ones.
	InstanceLabels []int `json:"instance_labels,omitempty"`
	// Holistic, when non-nil, describes the whole bag in the instances'
	// feature space: a photo taken as one region by the featurizer that
	// cut it into regions. MIER reads it (holistic=bag); every other model
	// ignores it.
	Holistic []float64 `json:"holistic,omitempty"`
}

// Labeled reports whether the bag carries a weak label set.
func (b *Bag) Labeled() bool { return b.Labels != nil }

// HasLabel reports whether class c is in the bag label set.
func (b *Bag) HasLabel(c int) bool {
	for _, l := range b.Labels {
		if l == c {
			return true
		}
	}
	return false
}

// Dataset is a collection of bags over a fixed class vocabulary.
type Dataset struct {
	Name    string   `json:"name"`
	Classes []string `json:"classes"`
	Dim     int      `json:"dim"`
	Bags    []Bag    `json:"bags"`
}

// NumInstances returns the total number of instances over all bags.
func (d *Dataset) NumInstances() int {
	n := 0
	for i := range d.Bags {
		n += d.Bags[i].Len()
	}
	return n
}

// HasInstanceLabels reports whether every instance carries a ground-truth class.
func (d *Dataset) HasInstanceLabels() bool {
	if len(d.Bags) == 0 {
		return false
	}
	for i := range d.Bags {
		b := &d.Bags[i]
		if len(b.InstanceLabels) != b.Len() {
			return false
		}
		for _, l := range b.InstanceLabels {
			if l == Unlabeled {
				return false
			}
		}
	}
	return true
}

// Subset returns a dataset sharing vocabulary and dimension with d that holds
// the bags at the given indices (bags are copied shallowly).
func (d *Dataset) Subset(idx []int) *Dataset {
	s := &Dataset{Name: d.Name, Classes: d.Classes, Dim: d.Dim, Bags: make([]Bag, len(idx))}
	for i, j := range idx {
		s.Bags[i] = d.Bags[j]
	}
	return s
}

// Errors returned by Validate; callers match them with errors.Is to route a
// bad bag to the dead-letter topic with a precise reason.
var (
	ErrEmptyBag     = errors.New("bag has no instances")
	ErrDimension    = errors.New("instance has the wrong dimension")
	ErrNonFinite    = errors.New("feature is NaN or Inf")
	ErrLabelRange   = errors.New("label outside the class vocabulary")
	ErrLabelOrder   = errors.New("labels not strictly ascending")
	ErrInstanceMeta = errors.New("instance labels do not match instances")
)

// Validate checks a bag against a dimension and a number of classes. dim or
// classes <= 0 skips that check.
func (b *Bag) Validate(dim, classes int) error {
	if b.Len() == 0 {
		return fmt.Errorf("bag %q: %w", b.ID, ErrEmptyBag)
	}
	if b.Sparse != nil && b.Instances != nil {
		return fmt.Errorf("bag %q: %w: both dense and sparse instances", b.ID, ErrSparse)
	}
	for i, v := range b.Sparse {
		if err := v.Validate(dim); err != nil {
			return fmt.Errorf("bag %q instance %d: %w", b.ID, i, err)
		}
	}
	for i, x := range b.Instances {
		if dim > 0 && len(x) != dim {
			return fmt.Errorf("bag %q instance %d: %w (got %d, want %d)", b.ID, i, ErrDimension, len(x), dim)
		}
		for j, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("bag %q instance %d feature %d: %w", b.ID, i, j, ErrNonFinite)
			}
		}
	}
	for i, l := range b.Labels {
		if l < 0 || (classes > 0 && l >= classes) {
			return fmt.Errorf("bag %q label %d: %w", b.ID, l, ErrLabelRange)
		}
		if i > 0 && l <= b.Labels[i-1] {
			return fmt.Errorf("bag %q: %w", b.ID, ErrLabelOrder)
		}
	}
	if b.Holistic != nil {
		if dim > 0 && len(b.Holistic) != dim {
			return fmt.Errorf("bag %q holistic vector: %w (got %d, want %d)", b.ID, ErrDimension, len(b.Holistic), dim)
		}
		for j, v := range b.Holistic {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("bag %q holistic feature %d: %w", b.ID, j, ErrNonFinite)
			}
		}
	}
	if b.InstanceLabels != nil {
		if len(b.InstanceLabels) != b.Len() {
			return fmt.Errorf("bag %q: %w (%d labels, %d instances)", b.ID, ErrInstanceMeta, len(b.InstanceLabels), b.Len())
		}
		for _, l := range b.InstanceLabels {
			if l != Unlabeled && (l < 0 || (classes > 0 && l >= classes)) {
				return fmt.Errorf("bag %q instance label %d: %w", b.ID, l, ErrLabelRange)
			}
		}
	}
	return nil
}

// Package admission decides whether a model can take a bag: the checks of a
// decoded bag against a model's dimension, class vocabulary and label cap,
// and the dead-letter reason of an error a model returned for a bag. The
// annotator checks the bags it serves against the model version it holds;
// the retrainer checks each training bag on arrival against the model it
// fits, so a bag that can never be fitted is dead-lettered instead of
// failing every refit. Both use the same checks and the same reasons.
package admission

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// Reason classifies an error of annotating or fitting a bag: the wire
// format's input errors (wire.ReasonOf) and the model contract's, which a
// model returns for a bag it cannot take. Anything else is not an input
// error (ok false): a fault of the model, not of the bag.
func Reason(err error) (wire.Reason, bool) {
	var re *wire.RejectError
	switch {
	case errors.As(err, &re):
		return re.Reason, true
	case errors.Is(err, models.ErrLabelSetTooLarge):
		return wire.ReasonLabelSetTooLarge, true
	}
	if r, ok := wire.ReasonOf(err); ok {
		return r, true
	}
	if errors.Is(err, models.ErrBadInput) {
		return wire.ReasonBadInput, true
	}
	return "", false
}

// Target is what a model reads: its dimension and class vocabulary, and
// the largest bag label set it accepts (0: no limit).
type Target struct {
	// Model names the model in errors ("model v3", "kind orlr").
	Model   string
	Dim     int
	Classes []string
	// Implicit are the classes closing Classes that the model added to its
	// data's vocabulary (models.Meta.ImplicitClasses): a bag's vocabulary
	// may be Classes without them.
	Implicit  []string
	MaxLabels int
	// NoEmptyLabels refuses bags labeled with an empty set, for a model
	// that cannot learn from one (models.Kind.EmptyLabelSets).
	NoEmptyLabels bool
	// EmptyLabelsOption names the setting that would accept them
	// (models.Kind.EmptyLabelSetsOption), for the refusal; "" when none.
	EmptyLabelsOption string
	// Featurizer, when non-nil, is the featurizer whose bags the target
	// reads (the zero one: vectors from the sender): a bag made by another
	// is refused (reason featurizer), however alike their dimensions.
	Featurizer *media.Featurizer
}

// Check rejects a bag the target cannot read: another dimension, another
// featurizer, labels over another class vocabulary, or more labels than
// MaxLabels. Errors are
// *wire.RejectError with the dead-letter reason.
func (t Target) Check(bm *wire.BagMessage) error {
	if bm.Dim != t.Dim {
		return wire.Reject(wire.ReasonDimension, fmt.Errorf("bag %q has dimension %d, %s expects %d", bm.ID, bm.Dim, t.Model, t.Dim))
	}
	if t.Featurizer != nil {
		var got media.Featurizer
		if bm.Featurizer != nil {
			got = *bm.Featurizer
		}
		if err := media.Check(*t.Featurizer, got); err != nil {
			return wire.Reject(wire.ReasonFeaturizer, fmt.Errorf("bag %q for %s: %w", bm.ID, t.Model, err))
		}
	}
	if bm.Labels != nil && !t.vocabulary(bm.Classes) {
		return wire.Reject(wire.ReasonVocabulary, fmt.Errorf("bag %q labels index classes %v, %s has %v", bm.ID, bm.Classes, t.Model, t.Classes))
	}
	if t.NoEmptyLabels && bm.Labels != nil && len(bm.Labels) == 0 {
		hint := ""
		if t.EmptyLabelsOption != "" {
			hint = " (--param " + t.EmptyLabelsOption + " makes such bags valid)"
		}
		return wire.Reject(wire.ReasonLabels, fmt.Errorf("bag %q has an empty label set, which %s cannot learn from%s", bm.ID, t.Model, hint))
	}
	if t.MaxLabels > 0 && len(bm.Labels) > t.MaxLabels {
		return wire.Reject(wire.ReasonLabelSetTooLarge, fmt.Errorf("bag %q has %d labels, over the label cap max_labels=%d: %w", bm.ID, len(bm.Labels), t.MaxLabels, models.ErrLabelSetTooLarge))
	}
	return nil
}

// vocabulary reports whether a bag's class vocabulary is the target's,
// or the target's without its implicit classes.
func (t Target) vocabulary(classes []string) bool {
	return slices.Equal(classes, t.Classes) || (len(t.Implicit) > 0 && slices.Equal(classes, t.DataClasses()))
}

// DataClasses returns the vocabulary of the target's training data:
// Classes without the implicit classes closing it (all of Classes when
// Implicit does not close it).
func (t Target) DataClasses() []string {
	n := len(t.Classes) - len(t.Implicit)
	if n < 0 || !slices.Equal(t.Classes[n:], t.Implicit) {
		return t.Classes
	}
	return t.Classes[:n]
}

// EmptyLabelSets reports whether kind fitted with params learns from
// bags labeled with an empty set (models.Kind.EmptyLabelSets; true when
// the kind declares nothing).
func EmptyLabelSets(kind models.Kind, params models.Params) (bool, error) {
	if kind.EmptyLabelSets == nil {
		return true, nil
	}
	ok, err := kind.EmptyLabelSets(params)
	if err != nil {
		return false, fmt.Errorf("%s: %w", kind.Name, err)
	}
	return ok, nil
}

// LabelCapParam is the parameter by which a kind whose cost is exponential
// in the bag label set (an exact dynamic programme over label subsets)
// declares the largest set it accepts; <= 0 means no limit.
const LabelCapParam = "max_labels"

// LabelCap returns the largest bag label set kind accepts when fitted with
// params: the value of its max_labels parameter (its declared default when
// params leave it out), or 0 (no limit) when the kind declares none.
func LabelCap(kind models.Kind, params models.Params) (int, error) {
	for _, p := range kind.Params {
		if p.Name != LabelCapParam {
			continue
		}
		def := 0
		if p.Default != "" {
			d, err := models.Params{LabelCapParam: p.Default}.Int(LabelCapParam, 0)
			if err != nil {
				return 0, fmt.Errorf("%s: default %w", kind.Name, err)
			}
			def = d
		}
		n, err := params.Int(LabelCapParam, def)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", kind.Name, err)
		}
		return max(n, 0), nil
	}
	return 0, nil
}

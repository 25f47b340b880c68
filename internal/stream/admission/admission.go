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
	Model     string
	Dim       int
	Classes   []string
	MaxLabels int
}

// Check rejects a bag the target cannot read: another dimension, labels
// over another class vocabulary, or more labels than MaxLabels. Errors are
// *wire.RejectError with the dead-letter reason.
func (t Target) Check(bm *wire.BagMessage) error {
	if bm.Dim != t.Dim {
		return wire.Reject(wire.ReasonDimension, fmt.Errorf("bag %q has dimension %d, %s expects %d", bm.ID, bm.Dim, t.Model, t.Dim))
	}
	if bm.Labels != nil && !slices.Equal(bm.Classes, t.Classes) {
		return wire.Reject(wire.ReasonVocabulary, fmt.Errorf("bag %q labels index classes %v, %s has %v", bm.ID, bm.Classes, t.Model, t.Classes))
	}
	if t.MaxLabels > 0 && len(bm.Labels) > t.MaxLabels {
		return wire.Reject(wire.ReasonLabelSetTooLarge, fmt.Errorf("bag %q has %d labels, over the label cap max_labels=%d: %w", bm.ID, len(bm.Labels), t.MaxLabels, models.ErrLabelSetTooLarge))
	}
	return nil
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

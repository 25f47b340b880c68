// Package models defines the contract between the learning algorithms (one
// subpackage per paper) and the parts of the product that train, evaluate,
// store and serve them. The pipeline depends only on this package; a model
// added later plugs in by providing a Kind.
//
// The contract, all of it checked by tests:
//
//   - a Kind with a Fit and a Decode, and a Params declaration (ParamSpec,
//     derived from the kind's Decls) of every key Fit reads: a Registry
//     rejects any other key and a value of the wrong type before Fit runs;
//   - a Model whose Annotate is safe for concurrent use, wraps ErrBadInput
//     for input it cannot handle, and annotates identically after
//     Encode and Registry.Decode; optional capabilities (FeatureMapper) are
//     declared here so a model can assert them;
//   - an interface guard (var _ models.Model = (*Model)(nil)) in the kind's
//     package, and no import of another kind or of the evaluation harness
//     (shared code lives below the models: internal/solver/...,
//     internal/metriclearn, internal/folds, internal/measure).
//
// Adding a kind: a package internal/models/<kind> with its Kind() and model,
// one line in package catalog; catalog's TestConformance then runs it
// through the contract, and internal/archtest checks its imports.
package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// Mode selects how a bag is annotated.
type Mode string

const (
	// Inductive annotation ignores any bag label: every class is a candidate.
	Inductive Mode = "inductive"
	// Transductive annotation restricts each instance to the classes of the
	// known bag label set (Pham et al. 2017, eq. 27; Law et al. 2017, eq. 15).
	Transductive Mode = "transductive"
)

// ParseMode parses "inductive" or "transductive".
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case Inductive, Transductive:
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown mode %q (want inductive or transductive)", s)
}

// Annotation is what a model says about one bag.
type Annotation struct {
	// InstanceLabels holds the predicted class of each instance; nil for
	// models that only label bags (Meta.InstanceLevel false).
	InstanceLabels []int `json:"instance_labels,omitempty"`
	// InstanceScores[i][c] is the score of class c for instance i (a
	// probability for probabilistic models, a decision value otherwise).
	InstanceScores [][]float64 `json:"instance_scores,omitempty"`
	// BagLabels is the predicted label set, ascending.
	BagLabels []int `json:"bag_labels"`
	// BagScores[c] ranks class c for the bag (used by the ranking metrics);
	// higher means more likely present.
	BagScores []float64 `json:"bag_scores"`
}

// Meta describes a trained model independently of its parameters.
type Meta struct {
	Kind    string   `json:"kind"`
	Classes []string `json:"classes"`
	Dim     int      `json:"dim"`
	// InstanceLevel is true when the model labels instances, not only bags.
	InstanceLevel bool `json:"instance_level"`
	// Params records the settings the model was fitted with, for provenance.
	Params Params `json:"params,omitempty"`
	// ImplicitClasses are classes the model appended to its training
	// data's vocabulary (ORed-LR's "unknown"): they close Classes, and a
	// bag's vocabulary may leave them out, since its label indices still
	// mean the same classes. Models without such classes have none.
	ImplicitClasses []string `json:"implicit_classes,omitempty"`
}

// OverClasses returns a with its bag labels and scores restricted to the
// first q classes: an annotation by a model with implicit classes
// (Meta.ImplicitClasses) scored over its data's vocabulary, as every
// scorer of the product does. Instance labels are kept: one naming an
// implicit class is simply wrong wherever its truth is a data class.
func (a Annotation) OverClasses(q int) Annotation {
	if q < 0 || len(a.BagScores) <= q {
		return a
	}
	a.BagScores = a.BagScores[:q:q]
	a.BagLabels = slices.DeleteFunc(slices.Clone(a.BagLabels), func(c int) bool { return c >= q })
	return a
}

// DataClasses returns the vocabulary of the data the model was fitted on:
// Classes without the implicit classes that close it.
func (m Meta) DataClasses() []string {
	if len(m.ImplicitClasses) > len(m.Classes) {
		return m.Classes // malformed metadata: no class is taken as implicit
	}
	return m.Classes[:len(m.Classes)-len(m.ImplicitClasses)]
}

// Model is a trained, immutable model. Annotate must be safe for concurrent use.
type Model interface {
	Meta() Meta
	// Annotate labels one bag. Input the model cannot handle (wrong
	// dimension, a label set too large for an exact algorithm) yields an
	// error wrapping ErrBadInput, so callers can dead-letter it rather than retry.
	Annotate(ctx context.Context, b *mil.Bag, mode Mode) (Annotation, error)
	// MarshalState encodes the parameters as JSON; Kind.Decode reverses it.
	MarshalState() ([]byte, error)
}

// ErrBadInput marks an error caused by the input bag, not by the model or
// the machine: retrying will not help.
var ErrBadInput = errors.New("bad input")

// ErrLabelSetTooLarge is returned (wrapping ErrBadInput) when a bag label set
// exceeds the limit of an algorithm that is exponential in its size.
var ErrLabelSetTooLarge = fmt.Errorf("%w: label set too large for the exact algorithm", ErrBadInput)

// ErrDenseOnly is returned (wrapping ErrBadInput) by a fit on sparse data
// given a setting that would fill every zero (a feature scaling that
// centres): the setting is declared for dense data only, and a kind that
// fits passages (text bags, the Weighted kinds) refuses it so.
var ErrDenseOnly = fmt.Errorf("%w: setting for dense data only", ErrBadInput)

// FitOptions are the settings common to every trainer.
type FitOptions struct {
	Seed int64
	// Params holds model-specific settings as key=value strings, so one
	// command line (--param key=value) serves every model.
	Params Params
	// Warm, when non-nil, is a model of the same kind to start from.
	Warm Model
	// Workers bounds parallelism; <= 0 means all cores.
	Workers int
	// Progress, when non-nil, is called as training advances (done of total
	// steps, in the model's own unit, e.g. EM iterations).
	Progress func(done, total int)
}

// Kind is a model family: how to fit it and how to decode a stored one.
type Kind struct {
	Name        string
	Description string
	// InstanceLevel mirrors Meta.InstanceLevel for models of this kind.
	InstanceLevel bool
	// Params declares every key Fit reads (see ParamSpec). A Registry
	// rejects any other key, and a value that does not parse as its type,
	// before Fit runs. nil means the kind declares nothing and its
	// parameters go unchecked, which only test kinds may do: every catalog
	// kind declares its parameters (an empty, non-nil list when it has
	// none), and the catalog's conformance test enforces it.
	Params []ParamSpec
	// EmptyLabelSets reports whether a model fitted with the given
	// parameters can learn from a labeled bag whose label set is empty.
	// nil means it can: to the MIL kinds such a bag is a negative one, and
	// most MIML kinds take it as a bag of no class. A kind whose fit
	// refuses one (ORed-LR without its unknown class: an empty union of
	// instance labels is impossible) declares it, so the stream can
	// dead-letter such a training bag on arrival instead of failing a refit.
	EmptyLabelSets func(Params) (bool, error)
	// EmptyLabelSetsOption names the setting that makes such bags valid
	// ("unknown=true"), for the errors that refuse them; "" when none.
	EmptyLabelSetsOption string
	Fit                  func(ctx context.Context, train *mil.Dataset, opt FitOptions) (Model, error)
	Decode               func(meta Meta, state []byte) (Model, error)

	// Sparse reports that Fit takes sparse bags (mil.Bag.Sparse) as they
	// are and that its models annotate them; other kinds get the data
	// densified by the registry (Wrap).
	Sparse bool
}

// CheckParams rejects a key that k does not declare, naming the valid
// ones, and a value that does not parse as its declared type. It accepts
// anything when k declares no parameters (Params nil).
func (k Kind) CheckParams(p Params) error {
	if k.Params == nil {
		return nil
	}
	if err := CheckParams(k.Params, p); err != nil {
		return fmt.Errorf("%s: %w", k.Name, err)
	}
	return nil
}

// Registry maps kind names to kinds. It is built explicitly by the commands
// (see package catalog), never mutated through package-level state.
type Registry struct {
	kinds map[string]Kind
}

// NewRegistry returns a registry holding the given kinds, each as wrap
// makes it: every path that fits or serves through a registry (the
// retrainer, the evaluation command, the annotator, the demo) then rejects
// a misspelt key and densifies sparse bags for a kind without a sparse path
// the same way, and neither a new kind nor a new caller can forget to.
func NewRegistry(kinds ...Kind) *Registry {
	r := &Registry{kinds: make(map[string]Kind, len(kinds))}
	for _, k := range kinds {
		r.kinds[k.Name] = Wrap(k)
	}
	return r
}

// Wrap returns k as a Registry hands it out, for a kind that wraps another
// outside a registry (the text featurizer's Weighted): its Fit checks the
// parameters against the declaration (Kind.CheckParams) first and, for a
// kind without a sparse path, trains on densified data; the models its
// Fit and Decode return annotate a sparse bag densified. A kind with a
// sparse path (Kind.Sparse) gets its data and its models unchanged.
// Wrapping twice is harmless: a wrapped kind's data and bags are dense.
func Wrap(k Kind) Kind {
	fit, decode := k.Fit, k.Decode
	if fit != nil {
		k.Fit = func(ctx context.Context, train *mil.Dataset, opt FitOptions) (Model, error) {
			if err := k.CheckParams(opt.Params); err != nil {
				return nil, err
			}
			opt.Warm = Unwrap(opt.Warm)
			m, err := fit(ctx, k.dataFor(train), opt)
			if err != nil {
				return nil, err
			}
			return k.densifying(m), nil
		}
	}
	if decode != nil {
		k.Decode = func(meta Meta, state []byte) (Model, error) {
			m, err := decode(meta, state)
			if err != nil {
				return nil, err
			}
			return k.densifying(m), nil
		}
	}
	return k
}

// Lookup returns the kind with the given name.
func (r *Registry) Lookup(name string) (Kind, error) {
	k, ok := r.kinds[name]
	if !ok {
		return Kind{}, fmt.Errorf("unknown model kind %q (known: %v)", name, r.Names())
	}
	return k, nil
}

// Names lists the registered kinds, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Package orlr is the ORed-logistic regression model for instance annotation
// (Pham, Raich, Fern & Perez Arriaga, "Dynamic Programming for Instance
// Annotation in Multi-instance Multi-label Learning", 2017): every instance
// label follows a multinomial logistic regression, a bag label is the union
// of its instance labels, and the parameters are fitted by (generalized) EM
// whose E-step is an exact dynamic programme over subsets of the bag label.
package orlr

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
	"github.com/mimlstream/mimlstream/internal/solver/softmax"
)

// Name is the kind name.
const Name = "orlr"

// UnknownClass names the class of instances that belong to no class of the
// vocabulary (parameter unknown=true). A data set may carry it in its
// vocabulary (the loaders of Pham et al.'s novel-class files name their
// merged novel class so); otherwise the model appends it to its classes.
const UnknownClass = "unknown"

// Kind returns the ORed-LR model kind.
func Kind() models.Kind {
	return models.Kind{
		Name:                 Name,
		Description:          "ORed-logistic regression, exact EM (Pham et al. 2017); linear or RBF kernel",
		InstanceLevel:        true,
		Params:               ParamSpecs(),
		EmptyLabelSets:       EmptyLabelSets,
		EmptyLabelSetsOption: "unknown=true",
		Sparse:               true,
		Fit: func(ctx context.Context, d *mil.Dataset, o models.FitOptions) (models.Model, error) {
			return Fit(ctx, d, o)
		},
		Decode: func(meta models.Meta, state []byte) (models.Model, error) { return Decode(meta, state) },
	}
}

// Model is a fitted ORed-LR model. It is immutable and safe for concurrent use.
type Model struct {
	meta   models.Meta
	cfg    Config
	scaler *ovr.Scaler    // nil: raw features (scale=none, or a model older than the option)
	lr     *softmax.Model // over the mapped features
	kern   *rbf           // nil for the linear model; its dictionary holds scaled instances
	// classPrior is the mean of p(c|x) over the training instances (nil
	// unless cfg.Prior is uniform): transductive annotation divides it out.
	classPrior []float64
}

// unknownClass returns the index of the unknown class, -1 without one.
func (m *Model) unknownClass() int {
	if !m.cfg.Unknown {
		return -1
	}
	return slices.Index(m.meta.Classes, UnknownClass)
}

var (
	_ models.Model         = (*Model)(nil)
	_ models.FeatureMapper = (*Model)(nil)
)

// state is the serialized form (MarshalState / Decode).
type state struct {
	Config Config `json:"config"`
	// Scaler is absent for scale=none and in states written before feature
	// scaling existed: both mean raw features.
	Scaler  *ovr.Scaler    `json:"scaler,omitempty"`
	Softmax *softmax.Model `json:"softmax"`
	Kernel  *rbf           `json:"kernel,omitempty"`
	// ClassPrior is present with prior=uniform.
	ClassPrior []float64 `json:"class_prior,omitempty"`
}

// Meta describes the model.
func (m *Model) Meta() models.Meta { return m.meta }

// Config returns the settings the model was fitted with.
func (m *Model) Config() Config { return m.cfg }

// MarshalState encodes the parameters as JSON.
func (m *Model) MarshalState() ([]byte, error) {
	return json.Marshal(state{Config: m.cfg, Scaler: m.scaler, Softmax: m.lr, Kernel: m.kern, ClassPrior: m.classPrior})
}

// Decode rebuilds a model from MarshalState output.
func Decode(meta models.Meta, blob []byte) (*Model, error) {
	var s state
	if err := json.Unmarshal(blob, &s); err != nil {
		return nil, fmt.Errorf("orlr: %w", err)
	}
	if s.Softmax == nil {
		return nil, fmt.Errorf("orlr: state has no parameters")
	}
	if s.Config.Scale == "" {
		s.Config.Scale = string(ovr.ScaleNone) // written before the option: raw features
	}
	if s.Config.Prior == "" {
		s.Config.Prior = PriorModel // written before the option: the model's prior
	}
	if err := s.Config.Validate(); err != nil {
		return nil, err
	}
	if s.Config.Prior == PriorUniform {
		if len(s.ClassPrior) != len(meta.Classes) {
			return nil, fmt.Errorf("orlr: prior=uniform with %d class priors for %d classes", len(s.ClassPrior), len(meta.Classes))
		}
		for c, v := range s.ClassPrior {
			if !(v > 0) || v > 1 {
				return nil, fmt.Errorf("orlr: class prior %d is %v, want (0, 1]", c, v)
			}
		}
	}
	if err := s.Softmax.Validate(); err != nil {
		return nil, fmt.Errorf("orlr: %w", err)
	}
	if s.Softmax.Classes != len(meta.Classes) {
		return nil, fmt.Errorf("orlr: %d classes in the parameters, %d in the metadata", s.Softmax.Classes, len(meta.Classes))
	}
	if s.Config.Unknown && !slices.Contains(meta.Classes, UnknownClass) {
		return nil, fmt.Errorf("orlr: model with an unknown class has no class named %q", UnknownClass)
	}
	if s.Scaler != nil {
		if _, err := ovr.ParseScaling(string(s.Scaler.Mode)); err != nil {
			return nil, fmt.Errorf("orlr: scaler: %w", err)
		}
		if len(s.Scaler.Mean) != meta.Dim || len(s.Scaler.Scale) != meta.Dim {
			return nil, fmt.Errorf("orlr: scaler of dimension %d/%d, want %d", len(s.Scaler.Mean), len(s.Scaler.Scale), meta.Dim)
		}
		for j, v := range s.Scaler.Scale {
			if !(v > 0) || math.IsInf(v, 0) || math.IsNaN(s.Scaler.Mean[j]) || math.IsInf(s.Scaler.Mean[j], 0) {
				return nil, fmt.Errorf("orlr: scaler feature %d: mean %v, scale %v", j, s.Scaler.Mean[j], v)
			}
		}
	}
	want := meta.Dim
	if s.Kernel != nil {
		if !(s.Kernel.Delta > 0) || len(s.Kernel.Dict) == 0 {
			return nil, fmt.Errorf("orlr: bad kernel state")
		}
		for _, d := range s.Kernel.Dict {
			if len(d) != meta.Dim {
				return nil, fmt.Errorf("orlr: dictionary entry of dimension %d, want %d", len(d), meta.Dim)
			}
		}
		want = len(s.Kernel.Dict)
	}
	if s.Softmax.Dim != want {
		return nil, fmt.Errorf("orlr: parameters over %d features, want %d", s.Softmax.Dim, want)
	}
	m := &Model{meta: meta, cfg: s.Config, scaler: s.Scaler, lr: s.Softmax, kern: s.Kernel}
	if s.Config.Prior == PriorUniform {
		m.classPrior = s.ClassPrior
	}
	return m, nil
}

// FeatureSpace identifies the instance mapping for the annotator's feature
// cache: the hash of the scaler, kernel width and dictionary, "" for the
// linear model (its map is at most an affine transform, not worth caching).
func (m *Model) FeatureSpace() string {
	if m.kern == nil {
		return ""
	}
	return m.kern.id(m.scaler)
}

// MapInstance returns the features the linear part of the model sees: x
// scaled (a copy) for the linear model, k(scaled x) for the kernel model.
func (m *Model) MapInstance(x []float64) ([]float64, error) {
	if len(x) != m.meta.Dim {
		return nil, fmt.Errorf("%w: %w (got %d, want %d)", models.ErrBadInput, mil.ErrDimension, len(x), m.meta.Dim)
	}
	for j, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: feature %d: %w", models.ErrBadInput, j, mil.ErrNonFinite)
		}
	}
	z := append([]float64(nil), x...)
	if m.scaler != nil {
		z = m.scaler.Apply(z, x)
	}
	if m.kern == nil {
		return z, nil
	}
	out := make([]float64, len(m.kern.Dict))
	m.kern.mapInto(z, out)
	return out, nil
}

// Annotate labels the instances of one bag and the bag.
func (m *Model) Annotate(ctx context.Context, b *mil.Bag, mode models.Mode) (models.Annotation, error) {
	if err := b.Validate(m.meta.Dim, len(m.meta.Classes)); err != nil {
		return models.Annotation{}, fmt.Errorf("%w: %w", models.ErrBadInput, err)
	}
	if m.scoresSparse(b) {
		return m.annotateLogits(ctx, b, m.sparseLogits(b), mode)
	}
	mapped := make([][]float64, b.Len())
	for i, x := range b.DenseInstances(m.meta.Dim) { // a sparse bag the linear path cannot score: densified one bag at a time
		f, err := m.MapInstance(x)
		if err != nil {
			return models.Annotation{}, fmt.Errorf("bag %q instance %d: %w", b.ID, i, err)
		}
		mapped[i] = f
	}
	return m.annotate(ctx, b, mapped, mode)
}

// AnnotateMapped is Annotate for instances already passed through
// MapInstance (the annotator caches them per FeatureSpace).
func (m *Model) AnnotateMapped(ctx context.Context, b *mil.Bag, mapped [][]float64, mode models.Mode) (models.Annotation, error) {
	if err := b.Validate(0, len(m.meta.Classes)); err != nil {
		return models.Annotation{}, fmt.Errorf("%w: %w", models.ErrBadInput, err)
	}
	if len(mapped) != b.Len() {
		return models.Annotation{}, fmt.Errorf("%w: %d mapped instances for %d instances", models.ErrBadInput, len(mapped), b.Len())
	}
	for i, f := range mapped {
		if len(f) != m.lr.Dim {
			return models.Annotation{}, fmt.Errorf("%w: mapped instance %d has %d features, want %d", models.ErrBadInput, i, len(f), m.lr.Dim)
		}
	}
	return m.annotate(ctx, b, mapped, mode)
}

func (m *Model) annotate(ctx context.Context, b *mil.Bag, mapped [][]float64, mode models.Mode) (models.Annotation, error) {
	nc := len(m.meta.Classes)
	logits := make([][]float64, len(mapped))
	for i, f := range mapped {
		logits[i] = make([]float64, nc)
		m.lr.Logits(f, logits[i])
	}
	return m.annotateLogits(ctx, b, logits, mode)
}

// scoresSparse reports whether Annotate scores the sparse bag b over its
// non-zeros: under the linear model with no scaling or a scaling that
// keeps zeros zero. Densifying a 66,000-feature text instance to take a
// dot product with its ~17 non-zeros was most of the cost of annotating it
// (and of the inner CV of select=cv, which annotates every held-out bag).
// The logits are the dense path's: both sum the same non-zero products in
// index order, the dense one adding only zero terms besides.
func (m *Model) scoresSparse(b *mil.Bag) bool {
	return b.Sparse != nil && b.Len() > 0 && m.kern == nil && (m.scaler == nil || m.scaler.KeepsSparsity())
}

// sparseLogits is the logits of the instances of b (scoresSparse(b)).
func (m *Model) sparseLogits(b *mil.Bag) [][]float64 {
	logits := make([][]float64, len(b.Sparse))
	for i, x := range b.Sparse {
		if m.scaler != nil {
			x = m.scaler.ApplySparse(x)
		}
		logits[i] = make([]float64, len(m.meta.Classes))
		m.lr.LogitsSparse(x, logits[i])
	}
	return logits
}

// annotateLogits labels b from its instances' logits in mode.
func (m *Model) annotateLogits(ctx context.Context, b *mil.Bag, logits [][]float64, mode models.Mode) (models.Annotation, error) {
	if err := ctx.Err(); err != nil {
		return models.Annotation{}, err
	}
	switch mode {
	case models.Inductive:
		return inductive(logits, m.unknownClass()), nil
	case models.Transductive:
		return m.transductive(b, logits)
	}
	return models.Annotation{}, fmt.Errorf("orlr: unknown mode %q", mode)
}

// inductive applies eq. 26 (argmax of p(y|x) per instance) and eq. 28 (bag
// label = union). The bag score of class c is 1 − Π_i (1 − p_ic): under the
// model's own assumptions (independent instance labels, bag label = union)
// this is exactly p(c ∈ Y | X), so it ranks classes by the probability the
// model assigns to their presence, using every instance (the paper's
// max_i p_ic keeps only one). The unknown class unk (-1: none) may label
// instances but is no bag label: bag labels name known classes, so it is
// left out of the union and scores 0.
func inductive(logits [][]float64, unk int) models.Annotation {
	nc := len(logits[0])
	a := models.Annotation{
		InstanceLabels: make([]int, len(logits)),
		InstanceScores: make([][]float64, len(logits)),
		BagScores:      make([]float64, nc),
	}
	logAbsent := make([]float64, nc)
	present := make([]bool, nc)
	for i, z := range logits {
		p := append([]float64(nil), z...)
		softmax.SoftmaxInPlace(p)
		a.InstanceScores[i] = p
		y := softmax.Argmax(p)
		a.InstanceLabels[i] = y
		present[y] = true
		for c, v := range p {
			logAbsent[c] += math.Log1p(-v)
		}
	}
	for c := range nc {
		a.BagScores[c] = -math.Expm1(logAbsent[c])
	}
	if unk >= 0 {
		a.BagScores[unk] = 0
		present[unk] = false
	}
	a.BagLabels = union(present)
	return a
}

// transductive applies eq. 27: y_i = argmax_c p(y_i=c, Y | X), which is the
// E-step posterior; classes outside the known bag label (and the unknown
// class, when the model has one) score 0. With an unknown class an empty
// bag label is valid: every instance is unknown. With prior=uniform the
// instance probabilities are p(c|x)/π_c, π the model's class prior, in
// that posterior (logits minus log π_c): the scores are the posterior
// under a uniform class prior (TestTransductivePosteriorBruteForce).
func (m *Model) transductive(b *mil.Bag, logits [][]float64) (models.Annotation, error) {
	unk := m.unknownClass()
	if !b.Labeled() || (len(b.Labels) == 0 && unk < 0) {
		return models.Annotation{}, fmt.Errorf("%w: bag %q: transductive annotation needs a non-empty bag label", models.ErrBadInput, b.ID)
	}
	if len(b.Labels) > m.cfg.MaxLabels {
		return models.Annotation{}, fmt.Errorf("bag %q has %d labels, limit %d: %w", b.ID, len(b.Labels), m.cfg.MaxLabels, models.ErrLabelSetTooLarge)
	}
	if len(b.Labels) > len(logits) {
		return models.Annotation{}, fmt.Errorf("%w: bag %q has %d labels but %d instances: impossible when the bag label is the union of instance labels", models.ErrBadInput, b.ID, len(b.Labels), len(logits))
	}
	nc := len(m.meta.Classes)
	if m.classPrior != nil {
		logits = dividePrior(logits, m.classPrior)
	}
	allowed, opt := allowedClasses(b.Labels, unk)
	k := len(allowed)
	post := make([][]float64, len(logits))
	for i := range post {
		post[i] = make([]float64, k)
	}
	if _, err := bagPosteriorsOpt(newBagScratch(), FAS, logits, allowed, opt, post); err != nil {
		return models.Annotation{}, fmt.Errorf("orlr: bag %q: %w", b.ID, err)
	}
	a := models.Annotation{
		InstanceLabels: make([]int, len(logits)),
		InstanceScores: make([][]float64, len(logits)),
		BagScores:      make([]float64, nc),
	}
	present := make([]bool, nc)
	for i, p := range post {
		s := make([]float64, nc)
		best := 0
		for j, c := range allowed {
			s[c] = p[j]
			if p[j] > p[best] {
				best = j
			}
		}
		a.InstanceScores[i] = s
		a.InstanceLabels[i] = allowed[best]
		present[allowed[best]] = true
	}
	// The bag label is given: its classes are present with certainty.
	for _, c := range b.Labels {
		a.BagScores[c] = 1
	}
	if unk >= 0 && !b.HasLabel(unk) {
		present[unk] = false // not a bag label (see inductive)
	}
	a.BagLabels = union(present)
	return a, nil
}

// dividePrior returns the logits of p(c|x)/π_c: each minus log π_c.
func dividePrior(logits [][]float64, prior []float64) [][]float64 {
	out := make([][]float64, len(logits))
	for i, z := range logits {
		out[i] = make([]float64, len(z))
		for c, v := range z {
			out[i][c] = v - math.Log(prior[c])
		}
	}
	return out
}

// classPrior returns the mean of p(c|x) over the instances whose logits
// logit gives, each class's at least the smallest positive float64 (a
// prior is divided by).
func classPrior(nc, n int, logit func(i int, out []float64)) []float64 {
	prior := make([]float64, nc)
	z := make([]float64, nc)
	for i := range n {
		logit(i, z)
		softmax.SoftmaxInPlace(z)
		for c, v := range z {
			prior[c] += v
		}
	}
	for c := range prior {
		prior[c] = max(prior[c]/float64(max(n, 1)), math.SmallestNonzeroFloat64)
	}
	return prior
}

func union(present []bool) []int {
	out := []int{}
	for c, ok := range present {
		if ok {
			out = append(out, c)
		}
	}
	sort.Ints(out)
	return out
}

// Package baseline holds the reference points of Pham et al. (2017, Section
// 6.2) as model kinds: SLR, multinomial logistic regression trained on the
// true instance labels (the upper bound no weakly supervised method should
// beat), and Dummy, which labels every instance with the most common class
// (the lower bound).
package baseline

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
	"github.com/mimlstream/mimlstream/internal/solver/softmax"
)

// SLRKind returns the supervised logistic regression kind ("slr"), its
// parameters declared by slrDecls: l2 on the mean log-likelihood, L-BFGS
// iters and the feature transform scale (sparse data, such as text
// passages, trains on its sparse rows with scale none). The paper's SLR
// is unregularised; the tiny default
// L2 only keeps the optimum finite on separable data (on MSCV2, 10-fold,
// raw features: l2=0 gives 60.8%, 1e-6 61.4%, 1e-4 55.6%, 1e-3 45.2%; paper
// 60.2%).
func SLRKind() models.Kind {
	return models.Kind{
		Name:          "slr",
		Description:   "multinomial logistic regression on the true instance labels (supervised upper bound, Pham et al. 2017)",
		InstanceLevel: true,
		Params:        slrDecls().Specs(defaultSLR()),
		Fit: func(ctx context.Context, d *mil.Dataset, o models.FitOptions) (models.Model, error) {
			return FitSLR(ctx, d, o)
		},
		Decode: func(meta models.Meta, state []byte) (models.Model, error) { return DecodeSLR(meta, state) },
		Sparse: true,
	}
}

// slrConfig holds SLR's parameters.
type slrConfig struct {
	L2    float64
	Iters int
	Scale ovr.Scaling
}

// slrDecls declares every key FitSLR reads once: its type, range, doc and
// the field it sets.
func slrDecls() models.Decls[slrConfig] {
	return models.Decls[slrConfig]{
		models.Float("l2", func(c *slrConfig) *float64 { return &c.L2 }, "L2 weight on the mean log-likelihood; keeps the optimum finite on separable data").AtLeast(0),
		models.Int("iters", func(c *slrConfig) *int { return &c.Iters }, "L-BFGS iterations").AtLeast(1),
		models.Enum("scale", func(c *slrConfig) *ovr.Scaling { return &c.Scale }, ovr.Scalings,
			"feature transform fitted on the training instances, stored in the model (none: raw features, the paper's; default zscore on dense data; sparse data: none, the only one)").DefaultVaries(),
	}
}

func defaultSLR() slrConfig { return slrConfig{L2: 1e-6, Iters: 3000, Scale: ovr.ScaleZScore} }

var _ models.Model = (*SLR)(nil)

// SLR is a fitted supervised logistic regression. Safe for concurrent use.
type SLR struct {
	meta   models.Meta
	lr     *softmax.Model
	scaler *ovr.Scaler // nil: raw features (scale=none, or a model older than the option)
}

// slrState is the serialized form: the weights' fields at the top level, as
// before scaling existed, so that old states decode (without a scaler).
type slrState struct {
	softmax.Model
	Scaler *ovr.Scaler `json:"scaler,omitempty"`
}

// FitSLR trains on every training instance that has a ground-truth label.
// It errors (wrapping models.ErrBadInput) when there is none: the data set
// cannot provide the upper bound.
func FitSLR(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (*SLR, error) {
	cfg, decls := defaultSLR(), slrDecls()
	if err := decls.Bind(opt.Params, &cfg); err != nil {
		return nil, fmt.Errorf("slr: %w", err)
	}
	if err := decls.Check("slr", cfg); err != nil {
		return nil, err
	}
	l2, iters, scale := cfg.L2, cfg.Iters, string(cfg.Scale)
	nc := len(train.Classes)
	if nc == 0 || train.Dim <= 0 {
		return nil, fmt.Errorf("slr: dataset has %d classes and dimension %d", nc, train.Dim)
	}
	// Sparse data (text passages) trains on sparse rows, unscaled: a
	// z-score would fill every row, and term weights are already on one
	// scale.
	sparse := train.IsSparse()
	if sparse {
		if _, explicit := opt.Params["scale"]; explicit && scale != string(ovr.ScaleNone) {
			return nil, fmt.Errorf("slr: %w: scale=%s on sparse data (only none keeps the rows sparse)", models.ErrDenseOnly, scale)
		}
		scale = string(ovr.ScaleNone)
	}
	var xs, ts [][]float64
	var sxs []mil.SparseVec
	for i := range train.Bags {
		b := &train.Bags[i]
		if err := b.Validate(train.Dim, nc); err != nil {
			return nil, fmt.Errorf("slr: %w: %w", models.ErrBadInput, err)
		}
		for j, y := range b.InstanceLabels {
			if y == mil.Unlabeled {
				continue
			}
			t := make([]float64, nc)
			t[y] = 1
			switch {
			case !sparse:
				xs = append(xs, b.Instances[j])
			case b.Sparse != nil:
				sxs = append(sxs, b.Sparse[j])
			default:
				sxs = append(sxs, mil.SparseOf(b.Instances[j]))
			}
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("slr: %w: no training instance has a ground-truth label", models.ErrBadInput)
	}
	// A warm model lends its weights only with its own transform, which its
	// weights are relative to; a warm model with another transform is
	// ignored.
	var scaler *ovr.Scaler
	w, warm := opt.Warm.(*SLR)
	warm = warm && w.lr.Classes == nc && w.lr.Dim == train.Dim && w.scaleMode() == scale
	if warm {
		scaler = w.scaler
	} else if scale != string(ovr.ScaleNone) {
		sc, err := ovr.FitScaler(ovr.Scaling(scale), xs, train.Dim)
		if err != nil {
			return nil, fmt.Errorf("slr: %w", err)
		}
		scaler = &sc
	}
	if scaler != nil {
		scaled := make([][]float64, len(xs))
		for i, x := range xs {
			scaled[i] = scaler.Apply(make([]float64, train.Dim), x)
		}
		xs = scaled
	}
	var prob *softmax.Problem
	var err error
	if sparse {
		prob, err = softmax.NewSparseProblem(nc, train.Dim, sxs, ts, l2, opt.Workers)
	} else {
		prob, err = softmax.NewProblem(nc, train.Dim, xs, ts, l2, opt.Workers)
	}
	if err != nil {
		return nil, fmt.Errorf("slr: %w", err)
	}
	lr := softmax.New(nc, train.Dim)
	if warm {
		copy(lr.W, w.lr.W)
	}
	if _, err := prob.MaximizeLBFGS(ctx, lr.W, iters, 1e-8); err != nil {
		return nil, err
	}
	if opt.Progress != nil {
		opt.Progress(1, 1)
	}
	meta := models.Meta{Kind: "slr", Classes: train.Classes, Dim: train.Dim, InstanceLevel: true,
		Params: decls.Render(slrConfig{L2: l2, Iters: iters, Scale: ovr.Scaling(scale)})}
	return &SLR{meta: meta, lr: lr, scaler: scaler}, nil
}

// scaleMode names the model's transform.
func (m *SLR) scaleMode() string {
	if m.scaler == nil {
		return string(ovr.ScaleNone)
	}
	mode, _ := ovr.ParseScaling(string(m.scaler.Mode))
	return string(mode)
}

// DecodeSLR rebuilds a model from MarshalState output.
func DecodeSLR(meta models.Meta, state []byte) (*SLR, error) {
	var st slrState
	if err := json.Unmarshal(state, &st); err != nil {
		return nil, fmt.Errorf("slr: %w", err)
	}
	lr := st.Model
	if err := lr.Validate(); err != nil {
		return nil, fmt.Errorf("slr: %w", err)
	}
	if lr.Classes != len(meta.Classes) || lr.Dim != meta.Dim {
		return nil, fmt.Errorf("slr: parameters %d×%d do not match the metadata %d×%d", lr.Classes, lr.Dim, len(meta.Classes), meta.Dim)
	}
	if sc := st.Scaler; sc != nil {
		if _, err := ovr.ParseScaling(string(sc.Mode)); err != nil {
			return nil, fmt.Errorf("slr: scaler: %w", err)
		}
		if len(sc.Mean) != meta.Dim || len(sc.Scale) != meta.Dim {
			return nil, fmt.Errorf("slr: scaler of dimension %d/%d, want %d", len(sc.Mean), len(sc.Scale), meta.Dim)
		}
		for j, v := range sc.Scale {
			if !(v > 0) || math.IsInf(v, 0) || math.IsNaN(sc.Mean[j]) || math.IsInf(sc.Mean[j], 0) {
				return nil, fmt.Errorf("slr: scaler feature %d: mean %v, scale %v", j, sc.Mean[j], v)
			}
		}
	}
	return &SLR{meta: meta, lr: &lr, scaler: st.Scaler}, nil
}

// Meta describes the model.
func (m *SLR) Meta() models.Meta { return m.meta }

// MarshalState encodes the weights.
func (m *SLR) MarshalState() ([]byte, error) {
	return json.Marshal(slrState{Model: *m.lr, Scaler: m.scaler})
}

// Annotate predicts argmax_c p(c|x) per instance (inductive) or the argmax
// over the bag label's classes (transductive, with the probabilities
// renormalised over them); the bag label is the union, the bag score of c
// is 1 − Π_i (1 − p_ic), the probability that some instance is c.
func (m *SLR) Annotate(ctx context.Context, b *mil.Bag, mode models.Mode) (models.Annotation, error) {
	nc := len(m.meta.Classes)
	if err := checkBag(b, m.meta.Dim, nc, mode); err != nil {
		return models.Annotation{}, err
	}
	if err := ctx.Err(); err != nil {
		return models.Annotation{}, err
	}
	probs := make([][]float64, b.Len())
	var z []float64
	if m.scaler != nil {
		z = make([]float64, m.meta.Dim)
	}
	for i := range probs {
		probs[i] = make([]float64, nc)
		switch {
		case b.Sparse != nil && m.scaler == nil:
			m.lr.LogitsSparse(b.Sparse[i], probs[i])
			softmax.SoftmaxInPlace(probs[i])
		default:
			var x []float64
			if b.Sparse != nil {
				x = b.Sparse[i].Dense(m.meta.Dim)
			} else {
				x = b.Instances[i]
			}
			if m.scaler != nil {
				x = m.scaler.Apply(z, x)
			}
			m.lr.Probs(x, probs[i])
		}
		if mode == models.Transductive {
			restrict(probs[i], b.Labels)
		}
	}
	a := models.Annotation{InstanceLabels: make([]int, len(probs)), InstanceScores: probs, BagScores: make([]float64, nc)}
	logAbsent := make([]float64, nc)
	present := make([]bool, nc)
	for i, p := range probs {
		y := softmax.Argmax(p)
		a.InstanceLabels[i] = y
		present[y] = true
		for c, v := range p {
			logAbsent[c] += math.Log1p(-min(v, 1))
		}
	}
	for c := range nc {
		a.BagScores[c] = -math.Expm1(logAbsent[c])
	}
	a.BagLabels = union(present)
	return a, nil
}

// restrict zeroes the classes outside labels and renormalises.
func restrict(p []float64, labels []int) {
	s := 0.0
	keep := make([]float64, len(labels))
	for j, c := range labels {
		keep[j] = p[c]
		s += p[c]
	}
	clear(p)
	for j, c := range labels {
		if s > 0 {
			p[c] = keep[j] / s
		} else {
			p[c] = 1 / float64(len(labels))
		}
	}
}

// checkBag validates a query bag; errors wrap models.ErrBadInput.
func checkBag(b *mil.Bag, dim, classes int, mode models.Mode) error {
	if err := b.Validate(dim, classes); err != nil {
		return fmt.Errorf("%w: %w", models.ErrBadInput, err)
	}
	switch mode {
	case models.Inductive:
	case models.Transductive:
		if len(b.Labels) == 0 {
			return fmt.Errorf("%w: bag %q: transductive annotation needs a non-empty bag label", models.ErrBadInput, b.ID)
		}
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	return nil
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

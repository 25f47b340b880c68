// Package ovr holds a trained one-vs-rest multi-instance classifier: one
// instance scorer per class (a linear function or an RBF kernel expansion)
// over transformed (by default standardised) features, and the rule that turns instance scores into a
// bag decision. SyMIL, mi-SVM and MI-SVM all produce this model; they differ
// in how they train the scorers and in the bag rule.
package ovr

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// Rule turns the instance scores of a bag into a bag score and decision.
type Rule string

const (
	// MinMax is SyMIL's symmetric rule (Durand et al. 2018, eq. 1): with M the
	// largest and m the smallest instance score, the bag is positive iff
	// M + m ≥ 0 (the instance farthest from the hyperplane decides), and its
	// score is f = M if M + m ≥ 0, else m.
	MinMax Rule = "minmax"
	// Max is the standard MIL rule of mi-SVM and MI-SVM: score M, positive
	// iff M > 0.
	Max Rule = "max"
)

// BagScore returns the bag score and decision of rule for instance scores s
// (non-empty).
func (r Rule) BagScore(s []float64) (score float64, positive bool) {
	hi, lo := s[0], s[0]
	for _, v := range s[1:] {
		hi = math.Max(hi, v)
		lo = math.Min(lo, v)
	}
	if r == MinMax {
		// A tie M + m = 0 goes to the positive side, as f = M then.
		if hi+lo >= 0 {
			return hi, true
		}
		return lo, false
	}
	return hi, hi > 0
}

// Scaling names the feature transform applied to every instance before it
// is scored. The paper does not say how features were prepared, and the
// trade-off C acts on ‖w‖ relative to the feature scale (C_eff ≈ C·scale²),
// so the transform is a parameter of every kind that trains this model.
type Scaling string

const (
	// ScaleZScore standardises each feature over the training instances
	// (the default; the empty Scaling of models serialised before the field
	// existed means this too).
	ScaleZScore Scaling = "zscore"
	// ScaleNone leaves the raw features.
	ScaleNone Scaling = "none"
	// ScaleUnit divides each instance by its L2 norm (no other transform).
	ScaleUnit Scaling = "unit"
	// ScaleZUnit z-scores, then divides each instance by its L2 norm.
	ScaleZUnit Scaling = "zunit"
	// ScaleMinMax maps each feature to [0, 1] over the training instances
	// (unseen instances may fall outside).
	ScaleMinMax Scaling = "minmax"
	// ScaleMaxAbs divides each feature by its largest absolute value over
	// the training instances: features in [−1, 1] without centring, so
	// that a zero stays zero and sparse instances stay sparse.
	ScaleMaxAbs Scaling = "maxabs"
)

// Scalings lists the valid values, the default first.
var Scalings = []Scaling{ScaleZScore, ScaleNone, ScaleUnit, ScaleZUnit, ScaleMinMax, ScaleMaxAbs}

// ParseScaling returns the Scaling named s; "" is the default z-score.
func ParseScaling(s string) (Scaling, error) {
	if s == "" {
		return ScaleZScore, nil
	}
	for _, v := range Scalings {
		if Scaling(s) == v {
			return v, nil
		}
	}
	return "", fmt.Errorf("scale %q (want zscore, none, unit, zunit, minmax or maxabs)", s)
}

// unitNorm reports whether the transform ends by normalising the instance.
func (m Scaling) unitNorm() bool { return m == ScaleUnit || m == ScaleZUnit }

// Scaler transforms features: x'_j = (x_j − Mean_j) / Scale_j, then, for
// the unit and zunit modes, x' / ‖x'‖ (an all-zero x' is left as is). Every
// mode is stored in this affine-plus-normalisation form (none and unit have
// Mean 0 and Scale 1, minmax has Mean = min and Scale = max − min), so the
// state keeps one shape and Apply one code path.
type Scaler struct {
	// Mode is omitted for the z-score so that states written before the
	// field existed and states written now decode alike.
	Mode  Scaling   `json:"mode,omitempty"`
	Mean  []float64 `json:"mean"`
	Scale []float64 `json:"scale"`
}

// FitScaler returns the scaler of the given mode fitted on rows.
// Constant features get scale 1 (z-score: centred only; minmax: mapped to
// 0). An unknown mode is an error.
func FitScaler(mode Scaling, rows [][]float64, dim int) (Scaler, error) {
	mode, err := ParseScaling(string(mode))
	if err != nil {
		return Scaler{}, err
	}
	s := Scaler{Mean: make([]float64, dim), Scale: make([]float64, dim)}
	if mode != ScaleZScore {
		s.Mode = mode
	}
	for j := range s.Scale {
		s.Scale[j] = 1
	}
	if len(rows) == 0 {
		return s, nil
	}
	switch mode {
	case ScaleZScore, ScaleZUnit:
		fitZScore(&s, rows)
	case ScaleMaxAbs:
		clear(s.Scale)
		for _, x := range rows {
			for j, v := range x {
				s.Scale[j] = math.Max(s.Scale[j], math.Abs(v))
			}
		}
		fixMaxAbs(&s)
	case ScaleMinMax:
		lo, hi := slices.Clone(rows[0]), slices.Clone(rows[0])
		for _, x := range rows[1:] {
			for j, v := range x {
				lo[j], hi[j] = math.Min(lo[j], v), math.Max(hi[j], v)
			}
		}
		for j := range s.Mean {
			s.Mean[j] = lo[j]
			if r := hi[j] - lo[j]; r > 1e-12 {
				s.Scale[j] = r
			}
		}
	}
	return s, nil
}

func fitZScore(s *Scaler, rows [][]float64) {
	for j := range s.Scale {
		s.Scale[j] = 0
	}
	for _, x := range rows {
		for j, v := range x {
			s.Mean[j] += v
		}
	}
	n := float64(len(rows))
	for j := range s.Mean {
		s.Mean[j] /= n
	}
	for _, x := range rows {
		for j, v := range x {
			d := v - s.Mean[j]
			s.Scale[j] += d * d
		}
	}
	for j := range s.Scale {
		s.Scale[j] = math.Sqrt(s.Scale[j] / n)
		if s.Scale[j] < 1e-12 {
			s.Scale[j] = 1
		}
	}
}

// Apply writes the transformed x into dst (len(dst) ≥ len(x)) and returns
// dst[:len(x)].
func (s Scaler) Apply(dst, x []float64) []float64 {
	dst = dst[:len(x)]
	for j, v := range x {
		dst[j] = (v - s.Mean[j]) / s.Scale[j]
	}
	if s.Mode.unitNorm() {
		n := 0.0
		for _, v := range dst {
			n += v * v
		}
		if n > 0 {
			n = 1 / math.Sqrt(n)
			for j := range dst {
				dst[j] *= n
			}
		}
	}
	return dst
}

// Scorer is one class's instance score function on standardised features:
// ⟨W, z⟩ + B for a linear scorer, Σ_u Beta_u·K(SV_u, z) + B for a kernel
// one, with K(x, z) = exp(−Gamma‖x − z‖²) (Kernel "" or "rbf", the form
// older states have) or (Gamma⟨x, z⟩ + Coef0)^Degree (Kernel "poly").
type Scorer struct {
	W      []float64   `json:"w,omitempty"`
	SV     [][]float64 `json:"sv,omitempty"`
	Beta   []float64   `json:"beta,omitempty"`
	Gamma  float64     `json:"gamma,omitempty"`
	Kernel string      `json:"kernel,omitempty"`
	Degree int         `json:"degree,omitempty"`
	Coef0  float64     `json:"coef0,omitempty"`
	B      float64     `json:"b"`

	// SparseSV replaces SV in a kernel scorer trained on sparse
	// instances: a text model's support vectors in their compressed form.
	SparseSV []mil.SparseVec `json:"sparse_sv,omitempty"`

	// blocks holds SV in blocks of four (set by validate, so every
	// scorer of a Model has it): scoreBlocks' AVX2 distances.
	blocks *Blocks
}

// KernelPoly names the polynomial kernel of a Scorer.
const KernelPoly = "poly"

// Score returns the score of the standardised instance z.
func (s *Scorer) Score(z []float64) float64 {
	if s.W != nil {
		v := s.B
		for j, w := range s.W {
			v += w * z[j]
		}
		return v
	}
	if s.SparseSV != nil {
		return s.scoreSparseSV(z)
	}
	return s.scoreBlocks(z)
}

// base4 sets out[i] to the γ-free part of the kernel between a and b[i]:
// ‖a − b[i]‖² for rbf, ⟨a, b[i]⟩ for poly. The four sums are interleaved,
// but each is still accumulated feature by feature in order, so each is the
// float of the one-at-a-time loop (and the same with a and b[i] swapped:
// a − b rounds to the negation of b − a), while the four independent
// additions per feature hide the latency of one sum's chain. It is
// Blocks.BaseRow where there are no AVX2 loops.
func base4(poly bool, a []float64, b [][]float64, out *[4]float64) {
	b0, b1, b2, b3 := b[0][:len(a)], b[1][:len(a)], b[2][:len(a)], b[3][:len(a)]
	var d0, d1, d2, d3 float64
	if poly {
		for j, v := range a {
			d0 += v * b0[j]
			d1 += v * b1[j]
			d2 += v * b2[j]
			d3 += v * b3[j]
		}
	} else {
		for j, v := range a {
			e0, e1, e2, e3 := v-b0[j], v-b1[j], v-b2[j], v-b3[j]
			d0 += e0 * e0
			d1 += e1 * e1
			d2 += e2 * e2
			d3 += e3 * e3
		}
	}
	*out = [4]float64{d0, d1, d2, d3}
}

// scoreBlocks is Score of a dense kernel scorer through its support
// vectors' blocks, up to 64 support vectors at a time: their distances (or
// inner products) four at a time in AVX2, their kernel values (ExpScaled:
// math.Exp's floats), then the sum of Beta_u·K_u in support-vector order,
// the floats of the one-at-a-time loop (TestScoreMatchesOneAtATime). A
// Model's scorers have their blocks from validate; a scorer used outside
// one (tests) lays them out per call.
func (s *Scorer) scoreBlocks(z []float64) float64 {
	bl := s.blocks
	if bl == nil {
		if len(s.SV) == 0 {
			return s.B
		}
		bl = NewBlocks(s.SV, len(s.SV[0]))
	}
	var buf [64]float64
	v := s.B
	poly := s.Kernel == KernelPoly
	nb := bl.NumBlocks()
	for b := 0; b < nb; b += len(buf) / 4 {
		c := min(len(buf)/4, nb-b)
		d := buf[:4*c]
		bl.BaseRow(poly, z, b, c, d)
		d = d[:min(len(d), len(s.SV)-4*b)]
		if poly {
			for i, x := range d {
				d[i] = math.Pow(s.Gamma*x+s.Coef0, float64(s.Degree))
			}
		} else {
			ExpScaled(d, d, -s.Gamma)
		}
		for i, k := range d {
			v += s.Beta[4*b+i] * k
		}
	}
	return v
}

func (s *Scorer) validate(dim int) error {
	if s.W != nil {
		if len(s.W) != dim {
			return fmt.Errorf("linear scorer has %d weights, want %d", len(s.W), dim)
		}
		return nil
	}
	if s.SparseSV != nil {
		if err := s.validateSparseSV(dim); err != nil {
			return err
		}
	} else if len(s.SV) != len(s.Beta) {
		return fmt.Errorf("kernel scorer has %d support vectors and %d coefficients", len(s.SV), len(s.Beta))
	}
	for _, sv := range s.SV {
		if len(sv) != dim {
			return fmt.Errorf("support vector of dimension %d, want %d", len(sv), dim)
		}
	}
	if !(s.Gamma > 0) {
		return fmt.Errorf("kernel scorer gamma %v must be positive", s.Gamma)
	}
	switch s.Kernel {
	case "", "rbf":
	case KernelPoly:
		if s.Degree < 1 || s.Degree > 10 || math.IsNaN(s.Coef0) || math.IsInf(s.Coef0, 0) {
			return fmt.Errorf("polynomial scorer degree %d, coef0 %v (want degree 1..10, finite coef0)", s.Degree, s.Coef0)
		}
	default:
		return fmt.Errorf("kernel scorer kind %q (want rbf or poly)", s.Kernel)
	}
	if s.SparseSV == nil && len(s.SV) > 0 {
		s.blocks = NewBlocks(s.SV, dim)
	}
	return nil
}

// State is the serialised form of a Model.
type State struct {
	Rule    Rule     `json:"rule"`
	Scaler  Scaler   `json:"scaler"`
	Scorers []Scorer `json:"scorers"`
	// Lambda records SyMIL's per-class λ after cross-validation (empty for
	// the baselines); informational.
	Lambda []float64 `json:"lambda,omitempty"`
}

var _ models.Model = (*Model)(nil)

// Model is an immutable trained one-vs-rest classifier; safe for concurrent
// use.
type Model struct {
	meta models.Meta
	st   State
}

// New checks st against meta and returns the model.
func New(meta models.Meta, st State) (*Model, error) {
	if st.Rule != MinMax && st.Rule != Max {
		return nil, fmt.Errorf("unknown bag rule %q", st.Rule)
	}
	if len(st.Scorers) != len(meta.Classes) {
		return nil, fmt.Errorf("%d scorers for %d classes", len(st.Scorers), len(meta.Classes))
	}
	if _, err := ParseScaling(string(st.Scaler.Mode)); err != nil {
		return nil, fmt.Errorf("scaler: %w", err)
	}
	if len(st.Scaler.Mean) != meta.Dim || len(st.Scaler.Scale) != meta.Dim {
		return nil, fmt.Errorf("scaler of dimension %d/%d, want %d", len(st.Scaler.Mean), len(st.Scaler.Scale), meta.Dim)
	}
	for i := range st.Scorers {
		if err := st.Scorers[i].validate(meta.Dim); err != nil {
			return nil, fmt.Errorf("class %d: %w", i, err)
		}
	}
	return &Model{meta: meta, st: st}, nil
}

// Decode reverses MarshalState.
func Decode(meta models.Meta, state []byte) (*Model, error) {
	var st State
	if err := json.Unmarshal(state, &st); err != nil {
		return nil, fmt.Errorf("decode one-vs-rest state: %w", err)
	}
	return New(meta, st)
}

// Meta implements models.Model.
func (m *Model) Meta() models.Meta { return m.meta }

// State returns the model's parameters (shared, do not modify).
func (m *Model) State() State { return m.st }

// MarshalState implements models.Model.
func (m *Model) MarshalState() ([]byte, error) { return json.Marshal(m.st) }

// InstanceScores returns the per-class scores of each instance of b, which
// must already be validated.
func (m *Model) InstanceScores(b *mil.Bag) [][]float64 {
	if b.IsSparse() {
		return m.instanceScoresSparse(b)
	}
	z := make([]float64, m.meta.Dim)
	out := make([][]float64, len(b.Instances))
	for i, x := range b.Instances {
		z = m.st.Scaler.Apply(z, x)
		row := make([]float64, len(m.st.Scorers))
		for c := range m.st.Scorers {
			row[c] = m.st.Scorers[c].Score(z)
		}
		out[i] = row
	}
	return out
}

// Annotate implements models.Model. BagScores[c] is the rule's bag score of
// class c and BagLabels the classes the rule calls positive. Each instance
// gets, among the candidate classes (the predicted labels; in transductive
// mode the bag's own labels when it has some), the one it scores highest;
// with no candidate (a bag predicted or known negative for every class) its
// label is mil.Unlabeled.
func (m *Model) Annotate(ctx context.Context, b *mil.Bag, mode models.Mode) (models.Annotation, error) {
	if err := ctx.Err(); err != nil {
		return models.Annotation{}, err
	}
	k := len(m.meta.Classes)
	if err := b.Validate(m.meta.Dim, k); err != nil {
		return models.Annotation{}, fmt.Errorf("%w: %w", models.ErrBadInput, err)
	}
	scores := m.InstanceScores(b)
	ann := models.Annotation{
		InstanceScores: scores,
		BagLabels:      []int{},
		BagScores:      make([]float64, k),
		InstanceLabels: make([]int, len(scores)),
	}
	col := make([]float64, len(scores))
	for c := range k {
		for i := range scores {
			col[i] = scores[i][c]
		}
		s, pos := m.st.Rule.BagScore(col)
		ann.BagScores[c] = s
		if pos {
			ann.BagLabels = append(ann.BagLabels, c)
		}
	}
	cand := ann.BagLabels
	if mode == models.Transductive && b.Labeled() {
		cand = b.Labels
	}
	for i := range scores {
		ann.InstanceLabels[i] = mil.Unlabeled
		best := math.Inf(-1)
		for _, c := range cand {
			if scores[i][c] > best {
				best, ann.InstanceLabels[i] = scores[i][c], c
			}
		}
	}
	return ann, nil
}

package metriclearn

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/assign"
)

// Prediction rules for instances.
const (
	// RuleCentroid is eq. 15 of Law et al. 2017: the class of the closest
	// centroid under the learned metric.
	RuleCentroid = "centroid"
	// RuleAlpha is eq. 16: argmax_c (Lᵀx)_c − α‖Lᵀz_c‖², which corrects for
	// clusters of different sizes.
	RuleAlpha = "alpha"
)

// Metrics accepted by the metric= parameter.
const (
	MetricLearned   = "learned"
	MetricEuclidean = "euclidean"
)

// unseenScore is the instance score of a class no training instance was
// assigned to: it has no centroid and is never predicted. (A finite value,
// so annotations stay encodable as JSON.)
const unseenScore = -math.MaxFloat64

// Config holds the settings shared by the metric models (see doc.go).
type Config struct {
	Metric string
	Center bool
	// Ridge is the closed form's ridge (TrainRidge, TrainSparse); read it
	// through RidgeFor, which knows its default.
	Ridge     float64
	Kernel    string
	Gamma     float64
	Landmarks int
	Rule      string
	Alpha     float64
	Refs      int
	Citers    int
	Hausdorff string
}

// Bag distances accepted by the hausdorff= parameter (Wang and Zucker 2000).
const (
	HausdorffMin = "min"
	HausdorffMax = "max"
)

// Params declares the keys of Config once, shared by every kind that
// builds a Model: their type, range, doc and the field each sets.
func Params() models.Decls[Config] {
	return models.Decls[Config]{
		models.Enum("metric", func(c *Config) *string { return &c.Metric }, []string{MetricLearned, MetricEuclidean},
			"learned Mahalanobis metric, or the identity (same centroids and citation-kNN: the papers' baseline)"),
		models.Enum("kernel", func(c *Config) *string { return &c.Kernel }, []string{KernelLinear, KernelRBF, KernelChi2},
			"feature map: identity, RBF exp(-gamma |a-b|^2), or chi2 exp(-gamma D_chi2) on l1-normalized non-negative vectors"),
		models.Float("gamma", func(c *Config) *float64 { return &c.Gamma }, "kernel width; 0 = 1 / mean pairwise distance (sampled)"),
		models.Int("landmarks", func(c *Config) *int { return &c.Landmarks }, "Nystrom landmarks of a kernel; 0 = every training instance (exact, O(n^3))").AtLeast(0),
		models.Bool("center", func(c *Config) *bool { return &c.Center }, "subtract the training mean of the features before learning"),
		models.Float(ParamRidge, func(c *Config) *float64 { return &c.Ridge },
			"ridge of the closed form, times the mean squared norm of a training instance; 0: the paper's pseudo-inverse (default 0 on dense instances, "+
				formatRidge(SparseRidge)+" on sparse passages, which have more features than instances)").AtLeast(0).DefaultVaries(),
		models.Enum(ParamRule, func(c *Config) *string { return &c.Rule }, []string{RuleCentroid, RuleAlpha},
			"instance labels: closest centroid (eq. 15) or the alpha rule (eq. 16, needs metric=learned); default centroid on dense instances, alpha on sparse passages").DefaultVaries(),
		models.Float("alpha", func(c *Config) *float64 { return &c.Alpha }, "alpha of eq. 16 (not used in training)").Finite(),
		models.Int("refs", func(c *Config) *int { return &c.Refs }, "citation-kNN references r (refs=citers=0: bag labels = union of instance labels)").AtLeast(0),
		models.Int("citers", func(c *Config) *int { return &c.Citers }, "citation-kNN citers c").AtLeast(0),
		models.Enum("hausdorff", func(c *Config) *string { return &c.Hausdorff }, []string{HausdorffMin, HausdorffMax},
			"bag distance of citation-kNN: minimal or maximal Hausdorff"),
	}
}

// DefaultConfig is the configuration of no parameter given.
func DefaultConfig() Config {
	return Config{Metric: MetricLearned, Center: true, Kernel: KernelLinear, Landmarks: 500, Rule: RuleCentroid,
		Alpha: 0.25, Refs: 20, Citers: 20, Hausdorff: HausdorffMin}
}

// ParamSpecs declares the keys ParseConfig reads, with their defaults.
func ParamSpecs() []models.ParamSpec { return Params().Specs(DefaultConfig()) }

// ParseConfig reads the shared parameters, with their defaults; the keys
// of the kind's own (mimlca's iters, say) are left to it.
func ParseConfig(p models.Params) (Config, error) {
	c := DefaultConfig()
	d := Params()
	if err := d.Set(p, &c); err != nil {
		return c, err
	}
	if err := d.Check("metriclearn", c); err != nil {
		return c, err
	}
	if c.Rule == RuleAlpha && c.Metric == MetricEuclidean {
		return c, fmt.Errorf("param rule=alpha needs metric=learned (eq. 16 reads the learned projection)")
	}
	return c, nil
}

// Keys whose defaults depend on the data (see Config.ForData).
const (
	ParamRidge = "ridge"
	ParamRule  = "rule"
)

// SparseRidge is the ridge on sparse passages when none is given. There
// the pseudo-inverse would map every training passage exactly onto its
// class; on text_dev (documents, 5-fold, true passage labels) ridge 0.1,
// 1, 3 and 10 give passage accuracy 0.691, 0.702, 0.701 and 0.685.
const SparseRidge = 1.0

func formatRidge(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// ForData returns c with the defaults of the data it is fitted on filled
// in for the keys p does not give. Dense instances keep the paper's: the
// pseudo-inverse (ridge 0) and the closest centroid (eq. 15). Sparse
// passages take ridge SparseRidge and the α rule (eq. 16): there the
// learned projection Lᵀx is a ridge regression of x onto its class
// indicator, whose largest coordinate names the class better than the
// nearest centroid, as the paper's own Table 3 finds on faces (eq. 16
// above eq. 15 at every α it tries). On text_dev (documents, 5-fold, bag
// labels) MIMLCA's passage accuracy is 0.689 with eq. 15, 0.710 with eq. 16.
func (c Config) ForData(p models.Params, sparse bool) Config {
	if !sparse {
		return c
	}
	if _, given := p[ParamRidge]; !given {
		c.Ridge = SparseRidge
	}
	if _, given := p[ParamRule]; !given {
		c.Rule = RuleAlpha
	}
	return c
}

// sparseData reports whether d holds its instances in sparse form (a
// dataset of passages holds them all so).
func sparseData(d *mil.Dataset) bool { return len(d.Bags) > 0 && d.Bags[0].IsSparse() }

// State is the serialized form of a metric model. Besides the projection and
// the class centroids it holds every training bag, projected (n_train ×
// OutDim floats, i.e. n_train × k for a learned metric), with its label set
// and its citation radius: citation-kNN is a lazy learner and needs them at
// prediction time. Measured encoded sizes (models.Encode, JSON): MSCV2
// (1758 instances, k = 23) 0.93 MB with the index, 34 KB without
// (refs=citers=0); Zhou's scene set (18 000 instances, k = 5) 2.1 MB and
// 2.8 KB.
type State struct {
	Projection Projection  `json:"projection"`
	Centroids  [][]float64 `json:"centroids"` // per class, projected; null when unseen
	Rule       string      `json:"rule"`
	Alpha      float64     `json:"alpha"`
	Refs       int         `json:"refs"`
	Citers     int         `json:"citers"`
	Hausdorff  string      `json:"hausdorff"`
	// TrainBags[i][j] is g(x_ij) for instance j of training bag i.
	TrainBags   [][][]float64 `json:"train_bags,omitempty"`
	TrainLabels [][]int       `json:"train_labels,omitempty"`
	// CiteRadius[i] is the (squared) minimal Hausdorff distance from
	// training bag i to its Citers-th nearest other training bag: a new bag
	// closer than that cites bag i.
	CiteRadius []float64 `json:"cite_radius,omitempty"`
}

// Model is a trained metric model: instance annotation by closest centroid
// (eq. 15) or the α rule (eq. 16), bag annotation by citation-kNN with the
// minimal Hausdorff distance under the metric. It is immutable and safe for
// concurrent use.
type Model struct {
	meta  models.Meta
	st    State
	cnorm []float64
	// idx indexes st.TrainBags for citation-kNN under the minimal
	// Hausdorff distance (nil without training bags or under the maximal
	// one); built at fit and decode time, never serialized.
	idx *bagIndex
	// carried is the number of classes at least one training bag carries:
	// citation-kNN's rank bonus needs the order of the bags until each of
	// them has been met, and no further.
	carried int
}

// Build assembles a model. assigned[i][j] is the class the training
// instance j of bag i was assigned to (-1: none); it defines the centroids.
// kind names the model family in its metadata.
func Build(ctx context.Context, kind string, train *mil.Dataset, proj Projection, assigned [][]int, cfg Config, params models.Params, workers int) (*Model, error) {
	k := len(train.Classes)
	cfg = cfg.ForData(params, sparseData(train))
	st := State{Projection: proj, Rule: cfg.Rule, Alpha: cfg.Alpha, Refs: cfg.Refs, Citers: cfg.Citers, Hausdorff: cfg.Hausdorff}
	if err := proj.validate(); err != nil {
		return nil, err
	}
	if cfg.Rule == RuleAlpha && proj.OutDim != k {
		return nil, fmt.Errorf("mlca: rule alpha needs a %d-dim learned projection, have %d", k, proj.OutDim)
	}
	sums := make([][]float64, k)
	counts := make([]int, k)
	scratch := make([]float64, len(proj.Landmarks))
	st.TrainBags = make([][][]float64, len(train.Bags))
	st.TrainLabels = make([][]int, len(train.Bags))
	for i := range train.Bags {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		b := &train.Bags[i]
		if len(assigned[i]) != b.Len() {
			return nil, fmt.Errorf("mlca: bag %d: %d assignments for %d instances", i, len(assigned[i]), b.Len())
		}
		g := make([][]float64, b.Len())
		for j := range g {
			g[j] = make([]float64, proj.OutDim)
			proj.project(b, j, g[j], scratch)
			if c := assigned[i][j]; c >= 0 {
				if sums[c] == nil {
					sums[c] = make([]float64, proj.OutDim)
				}
				for t, v := range g[j] {
					sums[c][t] += v
				}
				counts[c]++
			}
		}
		st.TrainBags[i] = g
		st.TrainLabels[i] = append([]int{}, b.Labels...)
	}
	st.Centroids = make([][]float64, k)
	for c := range sums {
		if counts[c] > 0 {
			for t := range sums[c] {
				sums[c][t] /= float64(counts[c])
			}
			st.Centroids[c] = sums[c]
		}
	}
	var idx *bagIndex
	if cfg.Refs == 0 && cfg.Citers == 0 {
		st.TrainBags, st.TrainLabels = nil, nil
	} else {
		if cfg.Hausdorff == HausdorffMin {
			idx = newBagIndex(st.TrainBags, proj.OutDim)
		} else {
			idx = newBagScan(st.TrainBags)
		}
		var err error
		if st.CiteRadius, err = idx.citeRadii(ctx, cfg.Citers, cfg.Hausdorff == HausdorffMax, workers); err != nil {
			return nil, err
		}
	}
	meta := models.Meta{Kind: kind, Classes: train.Classes, Dim: train.Dim, InstanceLevel: true, Params: params}
	return newModel(meta, st, idx)
}

// WithHausdorff returns the model m would be had it been built with the bag
// distance hausdorff and the metadata parameters params: the same
// projection, centroids and projected training bags (shared, not copied:
// both models are immutable), with the citation radii and index of that
// distance. It is Build with cfg.Hausdorff changed, minus the projection of
// every training instance and the centroid sums, which do not depend on the
// bag distance; select=cv of mimlca scores both distances on one learned
// metric this way.
func (m *Model) WithHausdorff(ctx context.Context, hausdorff string, params models.Params, workers int) (*Model, error) {
	st := m.st
	st.Hausdorff = hausdorff
	st.CiteRadius = nil
	if hausdorff != HausdorffMin && hausdorff != HausdorffMax {
		return nil, fmt.Errorf("mlca: unknown bag distance %q", hausdorff)
	}
	var idx *bagIndex
	if len(st.TrainBags) > 0 {
		if hausdorff == HausdorffMin {
			idx = newBagIndex(st.TrainBags, st.Projection.OutDim)
		} else {
			idx = newBagScan(st.TrainBags)
		}
		var err error
		if st.CiteRadius, err = idx.citeRadii(ctx, st.Citers, hausdorff == HausdorffMax, workers); err != nil {
			return nil, err
		}
	}
	meta := m.meta
	meta.Params = params
	return newModel(meta, st, idx)
}

// newModel checks st and assembles the model; idx is the index of
// st.TrainBags when the caller already built it (nil: built here).
func newModel(meta models.Meta, st State, idx *bagIndex) (*Model, error) {
	k := len(meta.Classes)
	if len(st.Centroids) != k {
		return nil, fmt.Errorf("mlca: %d centroids for %d classes", len(st.Centroids), k)
	}
	if st.Projection.InDim != meta.Dim {
		return nil, fmt.Errorf("mlca: projection input dim %d, model dim %d", st.Projection.InDim, meta.Dim)
	}
	if st.Hausdorff != HausdorffMin && st.Hausdorff != HausdorffMax {
		return nil, fmt.Errorf("mlca: unknown bag distance %q", st.Hausdorff)
	}
	m := &Model{meta: meta, st: st, cnorm: make([]float64, k)}
	seen := 0
	for c, z := range st.Centroids {
		if z == nil {
			continue
		}
		if len(z) != st.Projection.OutDim {
			return nil, fmt.Errorf("mlca: centroid %d of dim %d, want %d", c, len(z), st.Projection.OutDim)
		}
		seen++
		for _, v := range z {
			m.cnorm[c] += v * v
		}
	}
	if seen == 0 {
		return nil, fmt.Errorf("mlca: no class has a training instance")
	}
	if len(st.TrainBags) != len(st.TrainLabels) || (len(st.TrainBags) > 0 && len(st.CiteRadius) != len(st.TrainBags)) {
		return nil, fmt.Errorf("mlca: inconsistent training bag index")
	}
	for i, b := range st.TrainBags {
		for _, g := range b {
			if len(g) != st.Projection.OutDim {
				return nil, fmt.Errorf("mlca: training bag %d has a point of dim %d", i, len(g))
			}
		}
		for _, l := range st.TrainLabels[i] {
			if l < 0 || l >= k {
				return nil, fmt.Errorf("mlca: training bag %d has label %d", i, l)
			}
		}
	}
	if len(st.TrainBags) > 0 {
		// Under the maximal distance queries scan (see citationKNN): the
		// index served the fit's radii only, and would cost a copy of
		// every training point.
		if st.Hausdorff == HausdorffMin {
			if idx == nil {
				idx = newBagIndex(st.TrainBags, st.Projection.OutDim)
			}
			idx.setRadii(st.CiteRadius)
			m.idx = idx
		}
		has := make([]bool, k)
		for _, ls := range st.TrainLabels {
			for _, l := range ls {
				if !has[l] {
					has[l] = true
					m.carried++
				}
			}
		}
	}
	return m, nil
}

// Decode restores a model from its metadata and MarshalState output.
func Decode(meta models.Meta, state []byte) (*Model, error) {
	var st State
	if err := json.Unmarshal(state, &st); err != nil {
		return nil, err
	}
	if err := st.Projection.validate(); err != nil {
		return nil, err
	}
	return newModel(meta, st, nil)
}

// Meta implements models.Model.
func (m *Model) Meta() models.Meta { return m.meta }

// MarshalState implements models.Model.
func (m *Model) MarshalState() ([]byte, error) { return json.Marshal(m.st) }

// State returns the model's parameters (shared, do not modify).
func (m *Model) State() *State { return &m.st }

// Annotate implements models.Model. Instance scores are, per class, the
// negative squared distance to the class centroid under the metric (rule
// centroid, eq. 15) or (Lᵀx)_c − α‖Lᵀz_c‖² (rule alpha, eq. 16); a class
// without centroid scores -MaxFloat64. In transductive mode the label of an
// instance is the best-scored class among the bag's labels (all classes when
// the bag has none), except that every one of them is on some instance when
// the bag has as many instances (coverCandidates); the scores themselves are
// not masked. Bag scores are the
// citation-kNN votes (see citationKNN); bag labels are the citation-kNN
// prediction in inductive mode, and the union of the instance labels in
// transductive mode, where the bag's labels are known.
func (m *Model) Annotate(ctx context.Context, b *mil.Bag, mode models.Mode) (models.Annotation, error) {
	if err := ctx.Err(); err != nil {
		return models.Annotation{}, err
	}
	k := len(m.meta.Classes)
	if err := b.Validate(m.meta.Dim, k); err != nil {
		return models.Annotation{}, fmt.Errorf("%w: %w", models.ErrBadInput, err)
	}
	p := &m.st.Projection
	if p.Kernel == KernelChi2 {
		for j := range b.Len() {
			var x []float64
			if b.IsSparse() {
				x = b.Sparse[j].Val
			} else {
				x = b.Instances[j]
			}
			if err := checkNonNegative(x); err != nil {
				return models.Annotation{}, fmt.Errorf("%w: bag %q instance %d: %w", models.ErrBadInput, b.ID, j, err)
			}
		}
	}
	cand := m.candidates(b, mode)
	scratch := make([]float64, len(p.Landmarks))
	n := b.Len()
	g := make([][]float64, n)
	ann := models.Annotation{
		InstanceLabels: make([]int, n),
		InstanceScores: make([][]float64, n),
	}
	for j := range g {
		g[j] = make([]float64, p.OutDim)
		p.project(b, j, g[j], scratch)
		s := make([]float64, k)
		for c, z := range m.st.Centroids {
			switch {
			case z == nil:
				s[c] = unseenScore
			case m.st.Rule == RuleAlpha:
				s[c] = g[j][c] - m.st.Alpha*m.cnorm[c]
			default:
				s[c] = -sqDist(g[j], z)
			}
		}
		best := cand[0]
		for _, c := range cand[1:] {
			if s[c] > s[best] {
				best = c
			}
		}
		ann.InstanceScores[j], ann.InstanceLabels[j] = s, best
	}
	if mode == models.Transductive && n >= len(cand) {
		if err := coverCandidates(ann, cand); err != nil {
			return models.Annotation{}, fmt.Errorf("bag %q: %w", b.ID, err)
		}
	}
	if len(m.st.TrainBags) > 0 {
		ann.BagLabels, ann.BagScores = m.citationKNN(g)
	} else {
		ann.BagScores = make([]float64, k)
		for c := range ann.BagScores {
			ann.BagScores[c] = unseenScore
			for j := range g {
				ann.BagScores[c] = max(ann.BagScores[c], ann.InstanceScores[j][c])
			}
		}
	}
	if mode == models.Transductive || len(m.st.TrainBags) == 0 {
		set := slices.Clone(ann.InstanceLabels)
		slices.Sort(set)
		ann.BagLabels = slices.Compact(set)
	}
	return ann, nil
}

// coverCandidates relabels the instances of a transductive annotation so
// that every candidate class (the bag's labels) is on at least one
// instance, at the least total score lost: the bag label is the union of
// its instances' labels, so a class of the bag that no instance is
// nearest to still names one, the one it costs least to move (instances
// that two of the bag's classes would otherwise share). Each instance
// keeps its best candidate otherwise. ann has one instance per row of
// scores, at least as many as cand.
func coverCandidates(ann models.Annotation, cand []int) error {
	n, k := len(ann.InstanceScores), len(cand)
	cost := make([]float64, n*k)
	for j, s := range ann.InstanceScores {
		for t, c := range cand {
			// Scores are finite (an unseen class is no candidate); their
			// negatives are the costs, relative to the instance's best.
			cost[j*k+t] = -s[c]
		}
	}
	labels, _, err := assign.Cover(cost, n, k, k)
	if err != nil {
		return err
	}
	for j, t := range labels {
		ann.InstanceLabels[j] = cand[t]
	}
	return nil
}

// candidates lists the classes an instance of b may take: the seen classes
// of b's label set in transductive mode, every seen class otherwise (or when
// that intersection is empty).
func (m *Model) candidates(b *mil.Bag, mode models.Mode) []int {
	var cand []int
	if mode == models.Transductive {
		for _, c := range b.Labels {
			if m.st.Centroids[c] != nil {
				cand = append(cand, c)
			}
		}
	}
	if len(cand) == 0 {
		for c, z := range m.st.Centroids {
			if z != nil {
				cand = append(cand, c)
			}
		}
	}
	return cand
}

// minHausdorffBelow is the minimal Hausdorff distance (squared) between two
// bags of projected points, min over pairs of ‖a − b‖², when that is below
// bound, and some value >= bound otherwise: partial sums stop as soon as they
// reach the best value so far, which prunes most of the work when only near
// bags matter.
func minHausdorffBelow(a, b [][]float64, bound float64) float64 {
	best := bound
	for _, x := range a {
		for _, y := range b {
			best = min(best, sqDistBelow(x, y, best))
		}
	}
	return best
}

// maxHausdorffFrom is maxHausdorffBelow with the instance a[first] of a
// taken before the others; it also reports which instance of a made the
// distance reach bound (-1: none did, or it was one of b's). A scan that
// compares one bag a with many bags keeps the last such witness first: an
// instance of a far from every instance of one bag is usually far from
// every instance of the next (an instance of a class the other bag lacks),
// so the distance passes the bound at once. The order of the instances
// does not change the value when it is below bound (a maximum of minima of
// the same distances), so the result equals maxHausdorffBelow's.
func maxHausdorffFrom(a, b [][]float64, bound float64, first int) (float64, int) {
	h := 0.0
	for k := -1; k < len(a); k++ {
		w := k
		switch {
		case k < 0 && (first < 0 || first >= len(a)):
			continue // no valid first instance: a in order
		case k < 0:
			w = first
		case k == first:
			continue
		}
		x := a[w]
		m := math.Inf(1)
		for _, y := range b {
			if m = min(m, sqDist(x, y)); m <= h {
				break
			}
		}
		if h = max(h, m); h >= bound {
			return h, w
		}
	}
	for _, x := range b {
		m := math.Inf(1)
		for _, y := range a {
			if m = min(m, sqDist(x, y)); m <= h {
				break
			}
		}
		if h = max(h, m); h >= bound {
			return h, -1
		}
	}
	return h, -1
}

// citationKNN is the citation-kNN of Wang and Zucker (2000) with the minimal
// or maximal Hausdorff distance, extended to label sets as in Zhou's MIML
// experiments: the voters are the Refs nearest training bags (references)
// and the training bags that would count the new bag among their Citers
// nearest neighbours (citers); class c is predicted when more than half of
// the votes carry it. When no class reaches a majority the best-scored one
// is predicted, since every bag of these collections has at least one label.
//
// The score of class c is (votes_c + 0.5/(1 + r_c)) / votes, where r_c is the
// rank (by distance, ties by bag number) of the nearest training bag carrying
// c. The bonus is below one vote, so it only orders classes with equal vote
// counts (the ranking measures count ties pessimistically).
//
// Under the minimal Hausdorff distance the bags come from the index
// (bagIndex) in the order a sort of all the distances would give, and only
// as far as the references and the ranks need; citationKNNScan is the scan
// it replaces. Under the maximal distance the query scans every bag
// (citationKNNScan): the rank bonus needs the order of the bags up to the
// nearest carrier of every class, and under that distance even the nearest
// bags are at the range of the distances between classes (one instance
// of a class the query lacks is enough), where no index bound prunes; a
// best-first search measured 2 to 3 times slower than the scan on
// MSCV2-shaped data (BenchmarkCitationKNNIndex).
func (m *Model) citationKNN(g [][]float64) ([]int, []float64) {
	if m.st.Hausdorff == HausdorffMax {
		return m.citationKNNBounded(g)
	}
	k := len(m.meta.Classes)
	s := m.idx.pool.Get().(*queryScratch)
	defer m.idx.pool.Put(s)
	votes := make([]float64, k)
	total := 0.0
	if m.st.Citers > 0 {
		for _, i := range m.idx.citers(g, s) {
			for _, c := range m.st.TrainLabels[i] {
				votes[c]++
			}
			total++
		}
	}
	rank := make([]int, k)
	for c := range rank {
		rank[c] = -1
	}
	left := m.carried
	st := m.idx.newMinStream(g, -1, s)
	for r := 0; r < m.st.Refs || left > 0; r++ {
		n, ok := st.next()
		if !ok {
			break
		}
		for _, c := range m.st.TrainLabels[n.bag] {
			if r < m.st.Refs {
				votes[c]++
			}
			if rank[c] < 0 {
				rank[c] = r
				left--
			}
		}
		if r < m.st.Refs {
			total++
		}
	}
	return voteLabels(votes, rank, total)
}

// citationKNNBounded is citationKNNScan with each bag distance computed
// only as far as the answer needs it: a bag whose distance is above its
// citation radius, above the Refs-th smallest distance so far and above the
// distance of the nearest carrier so far of every class can be neither a
// citer, nor a reference, nor before the nearest carrier of any class, so
// its distance is abandoned as soon as it passes the largest of those
// three. The bounds only shrink as the scan goes on (in bag order, so a
// later bag at the same distance comes after), hence every bag that matters
// gets its exact distance, and sorting those alone gives the references and
// the ranks of the full sort: the votes and scores equal citationKNNScan's
// bit for bit (TestCitationIndexMatchesBruteForce compares them with ==).
// It is the path under the maximal Hausdorff distance, which no index
// prunes (see citationKNN); the bounds stop most of each distance instead.
func (m *Model) citationKNNBounded(g [][]float64) ([]int, []float64) {
	k := len(m.meta.Classes)
	type nb struct {
		d float64
		i int
	}
	var near []nb // the bags whose exact distance is known
	votes := make([]float64, k)
	total := 0.0
	refs := make([]float64, 0, m.st.Refs) // the Refs smallest distances so far, ascending
	carrier := make([]float64, k)         // per class, the distance of its nearest carrier so far
	has := make([]bool, k)                // per class, whether it has a carrier so far
	found := 0                            // classes with a carrier so far
	// The largest of the carrier distances, once every class some
	// training bag carries has a carrier (until then, no bound).
	carrierMax := math.Inf(1)
	if m.carried == 0 {
		carrierMax = math.Inf(-1)
	}
	first := 0 // g's instance that last made a distance reach the bound
	for i, tb := range m.st.TrainBags {
		need := math.Inf(-1) // the largest distance at which bag i still matters
		if m.st.Citers > 0 {
			need = m.st.CiteRadius[i]
		}
		switch {
		case len(refs) < m.st.Refs:
			need = math.Inf(1)
		case m.st.Refs > 0:
			need = max(need, refs[m.st.Refs-1])
		}
		need = max(need, carrierMax)
		// Above need, not at it: a tie with the citation radius makes a
		// citer, and the caller needs the exact value to tell.
		bound := math.Nextafter(need, math.Inf(1))
		d, w := m.bagDist(g, tb, bound, first)
		if w >= 0 {
			first = w
		}
		if bound != math.Inf(1) && d >= bound {
			continue
		}
		near = append(near, nb{d, i})
		if m.st.Citers > 0 && d <= m.st.CiteRadius[i] {
			for _, c := range m.st.TrainLabels[i] {
				votes[c]++
			}
			total++
		}
		if m.st.Refs > 0 && (len(refs) < m.st.Refs || d < refs[m.st.Refs-1]) {
			pos, _ := slices.BinarySearch(refs, d)
			if len(refs) < m.st.Refs {
				refs = append(refs, 0)
			}
			copy(refs[pos+1:], refs[pos:len(refs)-1])
			refs[pos] = d
		}
		updated := false
		for _, c := range m.st.TrainLabels[i] {
			if !has[c] || d < carrier[c] {
				found += b2i(!has[c])
				has[c], carrier[c], updated = true, d, true
			}
		}
		if updated && found == m.carried {
			carrierMax = math.Inf(-1)
			for c, v := range carrier {
				if has[c] {
					carrierMax = max(carrierMax, v)
				}
			}
		}
	}
	slices.SortFunc(near, func(a, b nb) int {
		return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.i, b.i))
	})
	for _, n := range near[:min(m.st.Refs, len(near))] {
		for _, c := range m.st.TrainLabels[n.i] {
			votes[c]++
		}
		total++
	}
	rank := make([]int, k)
	for c := range rank {
		rank[c] = -1
	}
	left := m.carried
	for r, n := range near {
		if left == 0 {
			break
		}
		for _, c := range m.st.TrainLabels[n.i] {
			if rank[c] < 0 {
				rank[c] = r
				left--
			}
		}
	}
	return voteLabels(votes, rank, total)
}

// bagDist is the model's bag distance from a to b below bound, as
// bagDistance computes it; under the maximal distance it takes a[first]
// first and reports the witness (see maxHausdorffFrom), under the minimal
// one it reports none.
func (m *Model) bagDist(a, b [][]float64, bound float64, first int) (float64, int) {
	if m.st.Hausdorff == HausdorffMax {
		return maxHausdorffFrom(a, b, bound, first)
	}
	return minHausdorffBelow(a, b, bound), -1
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sqDistBelow is ‖a − b‖², or any value >= bound once the partial sum
// reaches it (the caller only keeps values below bound).
func sqDistBelow(a, b []float64, bound float64) float64 {
	s := 0.0
	for i := range a {
		t := a[i] - b[i]
		s += t * t
		if s >= bound {
			return s
		}
	}
	return s
}

// voteLabels turns citation-kNN votes into a label set and scores, the same
// for the index and the scan: class c's score is (votes_c + 0.5/(1 + r_c)) /
// votes, r_c the rank of the nearest training bag carrying c (-1: none), and
// c is predicted when more than half of the votes carry it, or the
// best-scored class when none does.
func voteLabels(votes []float64, rank []int, total float64) ([]int, []float64) {
	scores := make([]float64, len(votes))
	var labels []int
	for c := range scores {
		bonus := 0.0
		if rank[c] >= 0 {
			bonus = 0.5 / float64(1+rank[c])
		}
		scores[c] = (votes[c] + bonus) / max(total, 1)
		if votes[c] > total/2 {
			labels = append(labels, c)
		}
	}
	if len(labels) == 0 {
		labels = []int{0}
		for c := range scores {
			if scores[c] > scores[labels[0]] {
				labels[0] = c
			}
		}
	}
	return labels, scores
}

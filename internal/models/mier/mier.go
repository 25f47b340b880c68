package mier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/svm"
)

// Name is the kind name in the model registry.
const Name = "mier"

// Kind returns the model kind for the registry.
func Kind() models.Kind {
	return models.Kind{
		Name:          Name,
		Description:   "multi-instance enriched representation by non-greedy l1-norm ratio maximisation (Liu et al. 2018), with 3-NN or RBF-SVM one-vs-rest",
		InstanceLevel: false,
		Params:        ParamSpecs(),
		Fit:           Fit,
		Decode:        Decode,
	}
}

// decls declares every key parseConfig reads once (see doc.go): its
// type, range, doc and the field it sets. r shows no default: it is a
// tenth of the data's dimension, and at most that dimension (validate).
func decls() models.Decls[config] {
	return models.Decls[config]{
		models.Enum("mode", func(c *config) *string { return &c.Mode }, []string{ModeShared, ModePerBag, ModeNone},
			"projection: one W from the pooled training instances, one per bag, or none (the holistic vector itself)"),
		models.Enum("classifier", func(c *config) *string { return &c.Classifier }, []string{ClassifierSVM, ClassifierKNN},
			"one-vs-rest RBF C-SVM, or k-nearest-neighbour vote (knn neighbours)"),
		models.Enum("holistic", func(c *config) *string { return &c.Holistic }, []string{HolisticMean, HolisticMedian, HolisticMax, HolisticBag},
			"holistic vector of a bag: per-feature mean, median or max of its instances, or the bag's own (bag: a photo's whole-image features; a bag without one is refused)"),
		models.Enum("projection", func(c *config) *string { return &c.Projection }, []string{ProjectionL1, ProjectionPCA},
			"shared mode: the paper's l1-norm ratio maximisation, or the top-r principal subspace (an ablation)"),
		models.Enum("fiton", func(c *config) *string { return &c.FitOn }, []string{FitInstances, FitHolistic},
			"shared mode: fit the projection on the training instances or on the bags' holistic vectors"),
		models.Int("r", func(c *config) *int { return &c.R }, "projected dimension, at most d; default max(1, round(d/10))").AtLeast(1).DefaultVaries(),
		models.Int("k", func(c *config) *int { return &c.K }, "neighbourhood size of the l1-norm ratio scatters").AtLeast(1),
		models.Float("beta", func(c *config) *float64 { return &c.Opt.Beta }, "Armijo factor of the step search").Above(0).Below(1),
		models.Int("maxiter", func(c *config) *int { return &c.Opt.MaxIter }, "maximum outer iterations of the ratio maximisation").AtLeast(0),
		models.Int("backtrack", func(c *config) *int { return &c.Opt.MaxBacktrack }, "maximum step halvings of one search").AtLeast(1),
		models.Float("tol", func(c *config) *float64 { return &c.Opt.Tol }, "stop when the objective rises by less than tol relatively").AtLeast(0),
		models.Bool("normalize", func(c *config) *bool { return &c.Opt.Normalize }, "scale the gradient to the norm of W before the step (a deviation from the paper)"),
		models.Bool("guard", func(c *config) *bool { return &c.Opt.Guard }, "keep W in the span of the global scatter's columns"),
		models.Bool("adaptive", func(c *config) *bool { return &c.Opt.Adaptive }, "start each step search at the last accepted step over beta"),
		models.Bool("standardize", func(c *config) *bool { return &c.Standardize }, "z-score the features over the training instances first"),
		models.Int("knn", func(c *config) *int { return &c.KNN }, "neighbours of the knn classifier").AtLeast(1),
		models.Bool("top1", func(c *config) *bool { return &c.Top1 }, "predict the top-scored label when none passes its threshold"),
		models.Enum("grid", func(c *config) *string { return &c.Grid }, []string{"small", "paper", "none"},
			"SVM C and gamma search: 4x4 grid, the paper's 11x11 grid, or none (c and gamma as given)"),
		models.Float("c", func(c *config) *float64 { return &c.C }, "SVM C with grid=none").Above(0),
		models.Float("gamma", func(c *config) *float64 { return &c.Gamma }, "SVM gamma with grid=none; 0 = 1 / mean squared distance of the representations").AtLeast(0),
		models.Int("cvfolds", func(c *config) *int { return &c.CVFolds }, "folds of the SVM grid search").AtLeast(2),
	}
}

// defaultConfig is the setting of no parameter given, for data of
// dimension dim.
func defaultConfig(dim int, seed int64) config {
	r := max(1, int(math.Round(float64(dim)/10)))
	return config{Mode: ModeShared, Classifier: ClassifierSVM, Holistic: HolisticMean, Projection: ProjectionL1, FitOn: FitInstances,
		R: r, K: 3, Opt: DefaultOptions(r), Standardize: true, KNN: 3, Top1: true, C: 1, Grid: "small", CVFolds: 3, Seed: seed}
}

// ParamSpecs declares the keys parseConfig reads (see doc.go).
func ParamSpecs() []models.ParamSpec { return decls().Specs(defaultConfig(1, 0)) }

// Projection modes (spec §1).
const (
	// ModePerBag learns W from each bag's own instances (the literal reading).
	ModePerBag = "perbag"
	// ModeShared learns one W from the pooled training instances.
	ModeShared = "shared"
	// ModeNone feeds the holistic vector itself to the classifier: the
	// paper's "SVM" baseline row, kept for comparison.
	ModeNone = "none"
)

// Holistic vector constructions (the public data has none; spec §7).
const (
	HolisticMean   = "mean"
	HolisticMedian = "median"
	HolisticMax    = "max"
	// HolisticBag reads the bag's own holistic vector (mil.Bag.Holistic):
	// the whole photo through the featurizer that cut it into regions,
	// the whole-image descriptor the paper assumes.
	HolisticBag = "bag"
)

// Projections learned in shared mode.
const (
	// ProjectionL1 is the paper's ℓ1-norm ratio maximisation.
	ProjectionL1 = "l1ratio"
	// ProjectionPCA is the top-r principal subspace of the pooled
	// instances, the ablation that tells what the ℓ1 ratio adds over
	// J_Global alone (Eq. 1).
	ProjectionPCA = "pca"
)

// What the shared projection is fitted on.
const (
	// FitInstances pools the training instances (the paper's "learn W from
	// the instances"), neighbourhoods searched within each bag.
	FitInstances = "instances"
	// FitHolistic uses the training bags' holistic vectors instead, one
	// point per bag, neighbourhoods searched over the whole pool: the
	// reading in which the global/local scatter is that of the images, not
	// of their regions.
	FitHolistic = "holistic"
)

// Classifiers.
const (
	ClassifierKNN = "knn"
	ClassifierSVM = "svm"
)

// config is the resolved setting of a model, from models.Params.
type config struct {
	Mode        string  `json:"mode"`
	Classifier  string  `json:"classifier"`
	Holistic    string  `json:"holistic"`
	Projection  string  `json:"projection"`
	FitOn       string  `json:"fit_on,omitempty"`
	R           int     `json:"r"`
	K           int     `json:"k"`
	Opt         Options `json:"opt"`
	Standardize bool    `json:"standardize"`
	KNN         int     `json:"knn"`
	Top1        bool    `json:"top1"`
	C           float64 `json:"c"`
	Gamma       float64 `json:"gamma"`
	Grid        string  `json:"grid"`
	CVFolds     int     `json:"cv_folds"`
	Seed        int64   `json:"seed"`
}

// parseConfig reads the model parameters; every key is documented in doc.go.
func parseConfig(p models.Params, dim int, seed int64) (config, error) {
	c := defaultConfig(dim, seed)
	if err := decls().Bind(p, &c); err != nil {
		return c, fmt.Errorf("mier: %w", err)
	}
	c.Opt.R = c.R
	return c, c.validate(dim)
}

// validate checks the declared ranges and the one that depends on the
// data: r at most its dimension.
func (c config) validate(dim int) error {
	if err := decls().Check(Name, c); err != nil {
		return err
	}
	if c.R > dim {
		return fmt.Errorf("mier: r=%d must be in [1, d=%d]", c.R, dim)
	}
	return nil
}

// params renders the resolved configuration for Meta.Params (provenance).
func (c config) params() models.Params { return decls().Render(c) }

// state is the serialized form of a model.
type state struct {
	Config config `json:"config"`
	// Shift and Scale standardise features: z = (x − Shift) / Scale.
	Shift []float64 `json:"shift"`
	Scale []float64 `json:"scale"`
	// W0 starts every per-bag fit, so a bag's representation depends on the
	// bag and the model only.
	W0 [][]float64 `json:"w0,omitempty"`
	// W is the shared projection (mode shared).
	W   [][]float64    `json:"w,omitempty"`
	KNN *knn           `json:"knn,omitempty"`
	SVM *svm.OneVsRest `json:"svm,omitempty"`
}

// Model is a trained MIER model. It is immutable and safe for concurrent use.
type Model struct {
	meta  models.Meta
	st    state
	w0, w *mat.Dense
}

var _ models.Model = (*Model)(nil)

// Meta describes the model.
func (m *Model) Meta() models.Meta { return m.meta }

// MarshalState encodes the model parameters.
func (m *Model) MarshalState() ([]byte, error) { return json.Marshal(m.st) }

// Fit trains a model on the labeled bags of train. Unlabeled bags are
// ignored (the representation learning is unsupervised, but the classifier
// needs labels and a bag-level model has nothing else to learn from them).
func Fit(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
	if train == nil || train.Dim < 1 || len(train.Classes) == 0 {
		return nil, fmt.Errorf("mier fit: %w: dataset without dimension or classes", models.ErrBadInput)
	}
	d, q := train.Dim, len(train.Classes)
	cfg, err := parseConfig(opt.Params, d, opt.Seed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", models.ErrBadInput, err)
	}
	var bags []*mil.Bag
	for i := range train.Bags {
		b := &train.Bags[i]
		if !b.Labeled() {
			continue
		}
		if err := b.Validate(d, q); err != nil {
			return nil, fmt.Errorf("mier fit: %w: %w", models.ErrBadInput, err)
		}
		bags = append(bags, b)
	}
	if len(bags) == 0 {
		return nil, fmt.Errorf("mier fit: %w: no labeled bag", models.ErrBadInput)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	progress := func(done, total int) {
		if opt.Progress != nil {
			opt.Progress(done, total)
		}
	}
	const steps = 3
	m := &Model{st: state{Config: cfg}}
	m.st.Shift, m.st.Scale = standardizer(bags, d, cfg.Standardize)

	rng := rand.New(rand.NewPCG(uint64(opt.Seed), 0x6d696572))
	m.w0 = RandomOrthonormal(rng, d, cfg.R)
	m.st.W0 = rows(m.w0)
	if cfg.Mode == ModeShared {
		groups := make([][][]float64, len(bags))
		for i, b := range bags {
			groups[i] = m.standardize(b.Instances)
		}
		if cfg.FitOn == FitHolistic {
			pool := make([][]float64, len(bags))
			for i, g := range groups {
				if pool[i], err = m.holisticOf(bags[i], g); err != nil {
					return nil, fmt.Errorf("mier fit: %w", err)
				}
			}
			groups = [][][]float64{pool}
		}
		p, err := NewProblem(groups, cfg.K)
		if err != nil {
			return nil, fmt.Errorf("mier fit: %w", err)
		}
		if cfg.Projection == ProjectionPCA {
			if m.w, err = p.PCA(cfg.R); err != nil {
				return nil, fmt.Errorf("mier fit: %w", err)
			}
		} else {
			res, err := p.Fit(ctx, m.w0, cfg.Opt)
			if err != nil {
				return nil, fmt.Errorf("mier fit: %w", err)
			}
			m.w = res.W
		}
		m.st.W = rows(m.w)
	}
	progress(1, steps)

	reps := make([][]float64, len(bags))
	labels := make([][]int, len(bags))
	err = parallelFor(ctx, len(bags), workers, func(i int) error {
		y, err := m.represent(ctx, bags[i])
		reps[i], labels[i] = y, append([]int{}, bags[i].Labels...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mier fit: %w", err)
	}
	progress(2, steps)

	switch cfg.Classifier {
	case ClassifierKNN:
		m.st.KNN = newKNN(cfg.KNN, reps, labels, q)
	case ClassifierSVM:
		ovr, err := trainSVM(ctx, reps, labels, q, cfg, workers)
		if err != nil {
			return nil, fmt.Errorf("mier fit: %w", err)
		}
		m.st.SVM = ovr
	}
	progress(3, steps)
	m.meta = models.Meta{Kind: Name, Classes: append([]string(nil), train.Classes...), Dim: d, Params: cfg.params()}
	return m, nil
}

// trainSVM fits the one-vs-rest SVMs. Gamma is expressed relative to the
// mean squared distance between training representations (s / D̄), so that
// one grid serves every mode, r and holistic construction; the paper's
// absolute grid {10⁻⁵..10⁵}² is available as grid=paper.
func trainSVM(ctx context.Context, reps [][]float64, labels [][]int, q int, cfg config, workers int) (*svm.OneVsRest, error) {
	unit := svm.MeanSqDist(reps)
	if !(unit > 0) {
		unit = 1
	}
	oc := svm.OVRConfig{Folds: cfg.CVFolds, Seed: uint64(cfg.Seed), Workers: workers}
	switch cfg.Grid {
	case "none":
		g := cfg.Gamma
		if g == 0 {
			g = 1 / unit
		}
		oc.Params = svm.Params{C: cfg.C, Gamma: g}
	case "small":
		g := svm.Grid{C: []float64{0.1, 1, 10, 100}}
		for _, s := range []float64{0.25, 1, 4, 16} {
			g.Gamma = append(g.Gamma, s/unit)
		}
		oc.Grid = &g
		oc.Params.MaxIter = 100 * len(reps)
	case "paper":
		g := svm.PaperGrid()
		oc.Grid = &g
		oc.Params.MaxIter = 100 * len(reps)
	}
	return svm.TrainOneVsRest(ctx, reps, labels, q, oc)
}

// Decode restores a model from MarshalState's output.
func Decode(meta models.Meta, blob []byte) (models.Model, error) {
	var st state
	if err := json.Unmarshal(blob, &st); err != nil {
		return nil, fmt.Errorf("mier decode: %w", err)
	}
	d, q := meta.Dim, len(meta.Classes)
	if meta.Kind != Name || d < 1 || q < 1 {
		return nil, fmt.Errorf("mier decode: meta kind %q, dim %d, %d classes", meta.Kind, d, q)
	}
	if st.Config.FitOn == "" {
		// States written before fiton existed were all fitted on instances.
		st.Config.FitOn = FitInstances
	}
	if err := st.Config.validate(d); err != nil {
		return nil, fmt.Errorf("mier decode: %w", err)
	}
	if len(st.Shift) != d || len(st.Scale) != d {
		return nil, fmt.Errorf("mier decode: standardiser of length %d/%d, want %d", len(st.Shift), len(st.Scale), d)
	}
	for _, s := range st.Scale {
		if !(s > 0) {
			return nil, fmt.Errorf("mier decode: non-positive feature scale %v", s)
		}
	}
	m := &Model{meta: meta, st: st}
	var err error
	if m.w0, err = dense(st.W0, d, st.Config.R); err != nil {
		return nil, fmt.Errorf("mier decode: w0: %w", err)
	}
	if st.Config.Mode == ModeShared {
		if m.w, err = dense(st.W, d, st.Config.R); err != nil {
			return nil, fmt.Errorf("mier decode: w: %w", err)
		}
	}
	rd := st.Config.R
	if st.Config.Mode == ModeNone {
		rd = d
	}
	switch st.Config.Classifier {
	case ClassifierKNN:
		k := st.KNN
		if k == nil || len(k.X) != len(k.Labels) || len(k.X) == 0 || len(k.Prior) != q || k.K < 1 {
			return nil, errors.New("mier decode: missing or inconsistent knn state")
		}
		for i, x := range k.X {
			if len(x) != rd {
				return nil, fmt.Errorf("mier decode: knn vector %d of dimension %d, want %d", i, len(x), rd)
			}
			for _, l := range k.Labels[i] {
				if l < 0 || l >= q {
					return nil, fmt.Errorf("mier decode: knn label %d of %d classes", l, q)
				}
			}
		}
	case ClassifierSVM:
		if st.SVM == nil || len(st.SVM.Models) != q {
			return nil, errors.New("mier decode: missing or inconsistent svm state")
		}
		for c, sm := range st.SVM.Models {
			if sm == nil {
				return nil, fmt.Errorf("mier decode: svm %d missing", c)
			}
			if err := sm.Validate(rd); err != nil {
				return nil, fmt.Errorf("mier decode: class %d: %w", c, err)
			}
		}
	}
	return m, nil
}

// Annotate predicts the label set of a bag. The model is bag-level: both
// modes give the same answer (a transductive bag label would be the answer
// itself), and the instance-level fields are nil.
func (m *Model) Annotate(ctx context.Context, b *mil.Bag, _ models.Mode) (models.Annotation, error) {
	if err := b.Validate(m.meta.Dim, 0); err != nil {
		return models.Annotation{}, fmt.Errorf("mier: %w: %w", models.ErrBadInput, err)
	}
	y, err := m.represent(ctx, b)
	if err != nil {
		return models.Annotation{}, err
	}
	var scores []float64
	var predicted func(score float64) bool
	switch m.st.Config.Classifier {
	case ClassifierKNN:
		scores = m.st.KNN.scores(y)
		predicted = func(s float64) bool { return s >= knnThreshold }
	default:
		scores = m.st.SVM.Decisions(y)
		predicted = func(s float64) bool { return s > 0 }
	}
	labels := []int{}
	best := 0
	for c, s := range scores {
		if predicted(s) {
			labels = append(labels, c)
		}
		if s > scores[best] {
			best = c
		}
	}
	if len(labels) == 0 && m.st.Config.Top1 {
		labels = append(labels, best)
	}
	return models.Annotation{BagLabels: labels, BagScores: scores}, nil
}

// Represent returns the enriched single-vector representation y = Wᵀx of a
// bag (x its holistic vector), the input of the classifier. It is exported
// for experiments that feed other learners.
func (m *Model) Represent(ctx context.Context, b *mil.Bag) ([]float64, error) {
	if err := b.Validate(m.meta.Dim, 0); err != nil {
		return nil, fmt.Errorf("mier: %w: %w", models.ErrBadInput, err)
	}
	return m.represent(ctx, b)
}

func (m *Model) represent(ctx context.Context, b *mil.Bag) ([]float64, error) {
	z := m.standardize(b.Instances)
	x, err := m.holisticOf(b, z)
	if err != nil {
		return nil, err
	}
	var w *mat.Dense
	switch m.st.Config.Mode {
	case ModeNone:
		return x, nil
	case ModeShared:
		w = m.w
	case ModePerBag:
		p, err := NewProblem([][][]float64{z}, m.st.Config.K)
		if err != nil {
			return nil, err
		}
		res, err := p.Fit(ctx, m.w0, m.st.Config.Opt)
		if err != nil {
			return nil, err
		}
		w = canonical(res.W, p)
	}
	var y mat.VecDense
	y.MulVec(w.T(), mat.NewVecDense(len(x), x))
	return append([]float64(nil), y.RawVector().Data...), nil
}

// canonical removes the symmetries of J (column order and signs) from a
// per-bag W so that coordinates mean the same thing from bag to bag as far
// as they can: columns in decreasing order of the bag's spread along them
// (‖Bᵀw_g‖₁), each signed so that its coordinates sum to a non-negative
// number (an axis of the standardised feature space all bags share).
func canonical(w *mat.Dense, p *Problem) *mat.Dense {
	d, r := w.Dims()
	type col struct {
		v      []float64
		spread float64
	}
	cols := make([]col, r)
	for g := 0; g < r; g++ {
		v := mat.Col(nil, g, w)
		var s float64
		for _, e := range v {
			s += e
		}
		if s < 0 {
			for i := range v {
				v[i] = -v[i]
			}
		}
		cols[g] = col{v, l1(p.Bt, mat.NewDense(d, 1, v), nil, 0)}
	}
	sort.SliceStable(cols, func(a, b int) bool { return cols[a].spread > cols[b].spread })
	out := mat.NewDense(d, r, nil)
	for g, c := range cols {
		out.SetCol(g, c.v)
	}
	return out
}

func (m *Model) standardize(instances [][]float64) [][]float64 {
	out := make([][]float64, len(instances))
	for i, x := range instances {
		z := make([]float64, len(x))
		for j, v := range x {
			z[j] = (v - m.st.Shift[j]) / m.st.Scale[j]
		}
		out[i] = z
	}
	return out
}

// standardizer returns the per-feature mean and standard deviation of the
// training instances (0 and 1 when standardisation is off; 1 for a constant
// feature).
func standardizer(bags []*mil.Bag, d int, on bool) (shift, scale []float64) {
	shift, scale = make([]float64, d), make([]float64, d)
	for j := range scale {
		scale[j] = 1
	}
	if !on {
		return shift, scale
	}
	n := 0
	for _, b := range bags {
		for _, x := range b.Instances {
			n++
			for j, v := range x {
				shift[j] += v
			}
		}
	}
	for j := range shift {
		shift[j] /= float64(n)
	}
	ss := make([]float64, d)
	for _, b := range bags {
		for _, x := range b.Instances {
			for j, v := range x {
				e := v - shift[j]
				ss[j] += e * e
			}
		}
	}
	for j := range scale {
		if s := math.Sqrt(ss[j] / float64(n)); s > 0 {
			scale[j] = s
		}
	}
	return shift, scale
}

// holisticOf returns bag b's holistic vector, standardized as its
// instances z are: the bag's own (holistic=bag) or one built from z.
func (m *Model) holisticOf(b *mil.Bag, z [][]float64) ([]float64, error) {
	if m.st.Config.Holistic != HolisticBag {
		return holistic(z, m.st.Config.Holistic), nil
	}
	if len(b.Holistic) != len(m.st.Shift) {
		return nil, fmt.Errorf("mier: %w: bag %q has %d holistic features, want %d (holistic=bag needs the bag's own whole-image vector)",
			models.ErrBadInput, b.ID, len(b.Holistic), len(m.st.Shift))
	}
	return m.standardize([][]float64{b.Holistic})[0], nil
}

// holistic builds the whole-image vector from the instances. The public MIML
// Scene data has only the 9 region vectors of each image; the mean is the
// natural whole-image summary of SBN-style colour features, median and max
// are the robust and the pooled alternatives compared in doc.go.
func holistic(z [][]float64, how string) []float64 {
	d := len(z[0])
	x := make([]float64, d)
	switch how {
	case HolisticMedian:
		col := make([]float64, len(z))
		for j := 0; j < d; j++ {
			for i := range z {
				col[i] = z[i][j]
			}
			sort.Float64s(col)
			n := len(col)
			if n%2 == 1 {
				x[j] = col[n/2]
			} else {
				x[j] = (col[n/2-1] + col[n/2]) / 2
			}
		}
	case HolisticMax:
		copy(x, z[0])
		for _, v := range z[1:] {
			for j := range x {
				x[j] = max(x[j], v[j])
			}
		}
	default:
		for _, v := range z {
			for j := range x {
				x[j] += v[j]
			}
		}
		for j := range x {
			x[j] /= float64(len(z))
		}
	}
	return x
}

func rows(m *mat.Dense) [][]float64 {
	r, _ := m.Dims()
	out := make([][]float64, r)
	for i := range out {
		out[i] = append([]float64(nil), m.RawRowView(i)...)
	}
	return out
}

func dense(rs [][]float64, d, r int) (*mat.Dense, error) {
	if len(rs) != d {
		return nil, fmt.Errorf("%d rows, want %d", len(rs), d)
	}
	m := mat.NewDense(d, r, nil)
	for i, row := range rs {
		if len(row) != r {
			return nil, fmt.Errorf("row %d has %d columns, want %d", i, len(row), r)
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, errors.New("non-finite entry")
			}
			m.Set(i, j, v)
		}
	}
	return m, nil
}

// parallelFor runs fn(0..n-1) on at most workers goroutines; each index
// writes only its own outputs, so results do not depend on scheduling.
func parallelFor(ctx context.Context, n, workers int, fn func(i int) error) error {
	workers = max(1, min(workers, n))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				if err := fn(i); err != nil {
					errs[w] = err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return errors.Join(errs...)
}

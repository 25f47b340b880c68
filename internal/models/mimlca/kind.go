package mimlca

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/mimlstream/mimlstream/internal/lsa"
	"github.com/mimlstream/mimlstream/internal/metriclearn"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"gonum.org/v1/gonum/mat"
)

// KindName is the registry name of MIMLCA.
const KindName = "mimlca"

// Kind returns the "mimlca" model kind.
func Kind() models.Kind {
	return models.Kind{
		Name:          KindName,
		Description:   "MIMLCA: metric learned from bag labels by adapted k-means and closed form (Law et al. 2017), centroid and citation-kNN annotation",
		InstanceLevel: true,
		Sparse:        true,
		Params:        ParamSpecs(),
		Fit: func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
			m, _, err := Fit(ctx, train, opt)
			return m, err
		},
		Decode: func(meta models.Meta, state []byte) (models.Model, error) {
			return metriclearn.Decode(meta, state)
		},
	}
}

var _ models.Model = (*metriclearn.Model)(nil)

// config is every parameter of the kind: metric learning's shared ones
// and MIMLCA's own.
type config struct {
	ml       metriclearn.Config
	opt      Options
	sel      string
	selFolds int
	selScore float64 // recorded by select=cv; ignored as input
}

// params declares every key Fit reads once: metric learning's (see
// metriclearn.Params) and MIMLCA's own (see doc.go).
func params() models.Decls[config] {
	shared := models.Embed(metriclearn.Params(), func(c *config) *metriclearn.Config { return &c.ml })
	// select=cv (the default) searches hausdorff unless it is given, so
	// its absence is not the same as its fixed default.
	shared = shared.With("hausdorff", func(d models.Decl[config]) models.Decl[config] {
		return d.DefaultVaries().AppendDoc(" (default: chosen by select=cv; min with select=none)")
	})
	return append(shared,
		models.Int("iters", func(c *config) *int { return &c.opt.Iters }, "maximum adapted k-means iterations per restart").AtLeast(1),
		models.Int("restarts", func(c *config) *int { return &c.opt.Restarts },
			"random initializations of the assignment after the authors' deterministic start (0: that start alone); lowest eq. 12 objective wins").AtLeast(0),
		models.Enum("assign", func(c *config) *string { return &c.opt.Assign }, []string{"input", "kernel"},
			"space of the adapted k-means of a kernel model (kernel is vacuous with many landmarks; see doc.go)"),
		models.Int("capacity", func(c *config) *int { return &c.opt.Capacity },
			"instances of a bag one candidate label may take (1: eq. 2 of the paper; default: chosen among 1, 9 by select=cv, 1 with select=none, on dense instances; on sparse passages the most passages a bag has, not searched)").AtLeast(1).DefaultVaries(),
		models.Int("assign_rank", func(c *config) *int { return &c.opt.AssignRank },
			"sparse passages: dimensions of the latent semantic basis the adapted k-means runs in (dense instances: the instances themselves)").AtLeast(1),
		models.Float("refine_ridge", func(c *config) *float64 { return &c.opt.RefineRidge },
			"sparse passages: ridge of the metric that re-assigns the training passages once after the adapted k-means, before the final metric is learned (0: no re-assignment)").AtLeast(0),
		models.Bool("cover", func(c *config) *bool { return &c.opt.Cover },
			"with capacity > 1, every label of a bag keeps at least one of its instances in the assignment (the union assumption eq. 13 holds at capacity 1); false: each instance on its nearest label, a label possibly on none"),
		models.Enum("select", func(c *config) *string { return &c.sel }, []string{SelectCV, SelectNone},
			"cv: choose capacity and hausdorff by inner cross-validation on the training bags; none: the paper's fixed settings"),
		models.Int(ParamSelectFolds, func(c *config) *int { return &c.selFolds }, "inner folds of select=cv").AtLeast(2),
		models.Float(ParamSelectScore, func(c *config) *float64 { return &c.selScore },
			"recorded by select=cv in Meta().Params (the winner's inner average precision); ignored as input").DefaultVaries(),
	)
}

func defaultConfig() config {
	return config{ml: metriclearn.DefaultConfig(), opt: Options{Iters: 50, Restarts: 10, Capacity: 1, Cover: true, Assign: "input", AssignRank: 300, RefineRidge: 1e4},
		sel: SelectCV, selFolds: 3}
}

// ParamSpecs declares the keys Fit reads, with their defaults.
func ParamSpecs() []models.ParamSpec { return params().Specs(defaultConfig()) }

// Options are the MIMLCA-specific parameters.
type Options struct {
	Iters    int
	Restarts int
	Capacity int
	// Cover: see KMeansOptions.Cover.
	Cover bool
	// Assign selects the space of the adapted k-means for a kernel model:
	// "input" (U from the centred input X) or "kernel" (U from Φ, K K† in
	// the paper). See doc.go for why "input" is the default.
	Assign string
	// RefineRidge is the ridge of the metric that re-assigns sparse
	// passages once after the k-means (0: no re-assignment; see reassign).
	RefineRidge float64
	// AssignRank is the rank of the latent semantic basis the adapted
	// k-means of sparse passages runs in (see learnSparse).
	AssignRank int
}

// parseConfig binds p through the declaration and checks the ranges.
func parseConfig(p models.Params) (config, error) {
	c := defaultConfig()
	d := params()
	if err := d.Bind(p, &c); err != nil {
		return c, fmt.Errorf("%s: %w", KindName, err)
	}
	return c, d.Check(KindName, c)
}

func parseOptions(p models.Params) (Options, error) {
	c, err := parseConfig(p)
	return c.opt, err
}

// Fit runs Algorithm 1 of Law et al. 2017 on the labeled bags of train
// (unlabeled bags carry no signal and are skipped) and returns the model with
// the adapted k-means outcome. Steps: φ = feature map (identity, or Nyström
// for a kernel); U = orthonormal basis of Φ's column space (step 1, via the
// Gram matrix); adapted k-means (steps 2-8); L = Φ_sel† J on the assigned
// rows (steps 9-11); the centroids are the class means of the assigned rows.
//
// With select=cv the capacity and bag distance are first chosen by an inner
// cross-validation on train (see Select); the Result is then the one of the
// final refit.
func Fit(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (*metriclearn.Model, Result, error) {
	c, err := parseConfig(opt.Params)
	if err != nil {
		return nil, Result{}, err
	}
	if c.sel == SelectCV {
		return fitSelected(ctx, train, opt)
	}
	return fit(ctx, train, opt)
}

// fit is Algorithm 1 with the settings of opt.Params as given.
func fit(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (*metriclearn.Model, Result, error) {
	cfg, err := metriclearn.ParseConfig(opt.Params)
	if err != nil {
		return nil, Result{}, err
	}
	o, err := parseOptions(opt.Params)
	if err != nil {
		return nil, Result{}, err
	}
	l, err := learn(ctx, train, cfg, o, opt)
	if err != nil {
		return nil, Result{}, err
	}
	m, err := metriclearn.Build(ctx, KindName, l.labeled, l.proj, l.assigned, cfg, opt.Params, opt.Workers)
	if err != nil {
		return nil, Result{}, fmt.Errorf("mimlca fit: %w", err)
	}
	if opt.Progress != nil {
		opt.Progress(3, 3)
	}
	return m, l.res, nil
}

// learned is the outcome of the metric learning of Algorithm 1, before the
// citation-kNN model is built on it.
type learned struct {
	labeled  *mil.Dataset // the labeled bags of the training set
	proj     metriclearn.Projection
	assigned [][]int // per labeled bag, the class of each instance (-1: none)
	res      Result
}

// learn runs Algorithm 1 up to the metric (feature map, adapted k-means,
// closed form). It reads neither hausdorff nor refs nor citers, nor draws
// anything after the k-means, so every citation-kNN setting of one fit
// shares its outcome (Select relies on this).
func learn(ctx context.Context, train *mil.Dataset, cfg metriclearn.Config, o Options, opt models.FitOptions) (learned, error) {
	k := len(train.Classes)
	labeled := &mil.Dataset{Name: train.Name, Classes: train.Classes, Dim: train.Dim}
	for i := range train.Bags {
		b := &train.Bags[i]
		if err := b.Validate(train.Dim, k); err != nil {
			return learned{}, fmt.Errorf("mimlca fit: %w: %w", models.ErrBadInput, err)
		}
		if b.Labeled() {
			labeled.Bags = append(labeled.Bags, *b)
		}
	}
	bags := make([]Bag, len(labeled.Bags))
	start, sparse := 0, 0
	for i := range labeled.Bags {
		b := &labeled.Bags[i]
		bags[i] = Bag{Start: start, N: b.Len(), Labels: b.Labels}
		start += b.Len()
		if b.IsSparse() {
			sparse++
		}
	}
	if start == 0 {
		return learned{}, fmt.Errorf("mimlca fit: %w", metriclearn.ErrNoData)
	}
	rng := rand.New(rand.NewPCG(uint64(opt.Seed), 0x6d696d6c))
	switch sparse {
	case 0:
	case len(labeled.Bags):
		return learnSparse(ctx, labeled, bags, cfg, o, opt, rng)
	default:
		return learned{}, fmt.Errorf("mimlca fit: %w: %d of %d bags sparse, the others dense", models.ErrBadInput, sparse, len(labeled.Bags))
	}
	xs := metriclearn.Instances(labeled)
	fm, err := metriclearn.NewFeatureMap(cfg.Kernel, cfg.Gamma, cfg.Landmarks, xs, rng)
	if err != nil {
		return learned{}, fmt.Errorf("mimlca fit: %w", err)
	}
	phi := fm.Matrix(xs)
	if cfg.Center {
		fm.Center(phi)
	}
	progress := func(done int) {
		if opt.Progress != nil {
			opt.Progress(done, 3)
		}
	}
	// Step 1: U with U Uᵀ = Φ Φ† (= K K† for a kernel).
	space := phi
	if cfg.Kernel != metriclearn.KernelLinear && o.Assign == "input" {
		lin, err := metriclearn.NewFeatureMap(metriclearn.KernelLinear, 0, 0, xs, rng)
		if err != nil {
			return learned{}, fmt.Errorf("mimlca fit: %w", err)
		}
		space = lin.Matrix(xs)
		if cfg.Center {
			lin.Center(space)
		}
	}
	wh, err := metriclearn.NewWhitener(metriclearn.Gram(space), len(xs))
	if err != nil {
		return learned{}, fmt.Errorf("mimlca fit: %w", err)
	}
	u := wh.Project(space)
	progress(1)
	res, err := AdaptedKMeans(ctx, u, bags, KMeansOptions{K: k, Capacity: o.Capacity, Cover: o.Cover, Iters: o.Iters, Restarts: o.Restarts, Workers: opt.Workers}, rng)
	if err != nil {
		return learned{}, fmt.Errorf("mimlca fit: %w", err)
	}
	progress(2)
	// Steps 9-11: closed form on the assigned rows.
	var sel []int
	for j, c := range res.Assigned {
		if c >= 0 {
			sel = append(sel, j)
		}
	}
	if len(sel) == 0 {
		return learned{}, fmt.Errorf("mimlca fit: %w: no bag has both instances and labels", metriclearn.ErrNoData)
	}
	var w *mat.Dense
	if cfg.Metric == metriclearn.MetricLearned {
		_, s := phi.Dims()
		xsel := mat.NewDense(len(sel), s, nil)
		lab := make([]int, len(sel))
		for r, j := range sel {
			xsel.SetRow(r, phi.RawRowView(j))
			lab[r] = res.Assigned[j]
		}
		if w, err = metriclearn.TrainRidge(xsel, lab, k, cfg.Ridge); err != nil {
			return learned{}, fmt.Errorf("mimlca fit: %w", err)
		}
	}
	assigned := make([][]int, len(bags))
	for i, b := range bags {
		assigned[i] = res.Assigned[b.Start : b.Start+b.N]
	}
	return learned{labeled: labeled, proj: fm.Projection(w), assigned: assigned, res: res}, nil
}

// learnSparse is learn on sparse passages (text), where the instances have
// tens of thousands of features and far fewer rows. Step 1 would then be
// vacuous (U Uᵀ = X X† = I when the passages are linearly independent, as
// with a kernel: see doc.go), so the adapted k-means runs on the whitened
// coordinates of a rank-AssignRank latent semantic basis of the passages,
// every passage assignable (passageCapacity); the assignment is refined
// once (reassign, unless RefineRidge is 0); the metric (steps 9-11) is
// learned on the passages themselves, by the
// ridge closed form solved with conjugate gradients (TrainSparse), and
// keeps only the features seen in training.
func learnSparse(ctx context.Context, labeled *mil.Dataset, bags []Bag, cfg metriclearn.Config, o Options, opt models.FitOptions, rng *rand.Rand) (learned, error) {
	if cfg.Kernel != metriclearn.KernelLinear || cfg.Metric != metriclearn.MetricLearned {
		return learned{}, fmt.Errorf("mimlca fit: %w: sparse passages take kernel=linear metric=learned only, not kernel=%s metric=%s",
			models.ErrDenseOnly, cfg.Kernel, cfg.Metric)
	}
	if _, given := opt.Params["capacity"]; !given {
		o.Capacity = passageCapacity(labeled)
	}
	var xs []mil.SparseVec
	for i := range labeled.Bags {
		xs = append(xs, labeled.Bags[i].Sparse...)
	}
	basis, err := lsa.FitBasis(ctx, xs, o.AssignRank, rng)
	if err != nil {
		return learned{}, fmt.Errorf("mimlca fit: %w", err)
	}
	space := mat.NewDense(len(xs), basis.Rank, nil)
	for j, x := range xs {
		space.SetRow(j, basis.Project(x))
	}
	if cfg.Center {
		metriclearn.CenterColumns(space)
	}
	wh, err := metriclearn.NewWhitener(metriclearn.Gram(space), len(xs))
	if err != nil {
		return learned{}, fmt.Errorf("mimlca fit: %w", err)
	}
	if opt.Progress != nil {
		opt.Progress(1, 3)
	}
	k := len(labeled.Classes)
	res, err := AdaptedKMeans(ctx, wh.Project(space), bags, KMeansOptions{K: k, Capacity: o.Capacity, Cover: o.Cover, Iters: o.Iters, Restarts: o.Restarts, Workers: opt.Workers}, rng)
	if err != nil {
		return learned{}, fmt.Errorf("mimlca fit: %w", err)
	}
	if opt.Progress != nil {
		opt.Progress(2, 3)
	}
	var sel, lab []int
	for j, c := range res.Assigned {
		if c >= 0 {
			sel, lab = append(sel, j), append(lab, c)
		}
	}
	if len(sel) == 0 {
		return learned{}, fmt.Errorf("mimlca fit: %w: no bag has both instances and labels", metriclearn.ErrNoData)
	}
	assigned := make([][]int, len(bags))
	for i, b := range bags {
		assigned[i] = res.Assigned[b.Start : b.Start+b.N]
	}
	if o.RefineRidge > 0 {
		if sel, lab, err = reassign(ctx, labeled, xs, sel, lab, assigned, cfg, o, opt); err != nil {
			return learned{}, fmt.Errorf("mimlca fit: %w", err)
		}
	}
	proj, err := metriclearn.TrainSparse(ctx, xs, sel, lab, k, labeled.Dim, cfg.ForData(opt.Params, true).Ridge, cfg.Center)
	if err != nil {
		return learned{}, fmt.Errorf("mimlca fit: %w", err)
	}
	return learned{labeled: labeled, proj: proj, assigned: assigned, res: res}, nil
}

// reassign gives every training passage the label the transductive
// annotation (eq. 16 with every bag label covered, as Annotate does) puts
// on it under the metric learned from the k-means assignment with ridge
// o.RefineRidge, and returns the rows and labels the final metric is
// learned on; assigned (aliasing res.Assigned) is updated in place.
//
// The adapted k-means assigns in a few hundred latent coordinates, and the
// final metric (ridge SparseRidge) fits its assignment almost exactly: the
// passages it got wrong stay wrong. A strongly regularised metric cannot
// fit single passages, only each class's direction in the full feature
// space, and re-assigning under it corrects some of them. This is one
// more step of the paper's alternation between assignment and metric
// (H as a function of M, section 2.2), with a smoother M. On text_dev
// (documents, 5-fold, bag labels) it lifts transductive passage accuracy
// from 0.949 to 0.96 and inductive from 0.710 to 0.71.
func reassign(ctx context.Context, labeled *mil.Dataset, xs []mil.SparseVec, sel, lab []int, assigned [][]int,
	cfg metriclearn.Config, o Options, opt models.FitOptions) ([]int, []int, error) {
	k := len(labeled.Classes)
	smooth, err := metriclearn.TrainSparse(ctx, xs, sel, lab, k, labeled.Dim, o.RefineRidge, cfg.Center)
	if err != nil {
		return nil, nil, err
	}
	// No citation-kNN: only the instance labels are read.
	bare := cfg
	bare.Refs, bare.Citers = 0, 0
	m, err := metriclearn.Build(ctx, KindName, labeled, smooth, assigned, bare, opt.Params, opt.Workers)
	if err != nil {
		return nil, nil, err
	}
	sel, lab = sel[:0], lab[:0]
	row := 0
	for i := range labeled.Bags {
		b := &labeled.Bags[i]
		if len(b.Labels) == 0 {
			row += b.Len()
			continue // no label to assign: left out, as by the k-means
		}
		ann, err := m.Annotate(ctx, b, models.Transductive)
		if err != nil {
			return nil, nil, err
		}
		for j, c := range ann.InstanceLabels {
			assigned[i][j] = c
			sel, lab = append(sel, row+j), append(lab, c)
		}
		row += b.Len()
	}
	return sel, lab, nil
}

// passageCapacity is the capacity of sparse passages when none is given:
// the most passages a bag has, so that every passage of a document may be
// about the same one of its labels. The paper's capacity 1 (a label on one
// instance of the bag: a face per name) leaves all but one passage per
// topic out of the metric; on text_dev, 5-fold, capacity 1 gives passage
// accuracy 0.60 where 9 gives 0.71.
func passageCapacity(d *mil.Dataset) int {
	c := 1
	for i := range d.Bags {
		c = max(c, d.Bags[i].Len())
	}
	return c
}

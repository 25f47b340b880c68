package mimlca

import (
	"context"
	"fmt"
	"math/rand/v2"

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
			"instances of a bag one candidate label may take (1: eq. 2 of the paper; default: chosen among 1, 9 by select=cv, 1 with select=none)").AtLeast(1).DefaultVaries(),
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
	return config{ml: metriclearn.DefaultConfig(), opt: Options{Iters: 50, Restarts: 10, Capacity: 1, Cover: true, Assign: "input"},
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
	xs := metriclearn.Instances(labeled)
	if len(xs) == 0 {
		return learned{}, fmt.Errorf("mimlca fit: %w", metriclearn.ErrNoData)
	}
	bags := make([]Bag, len(labeled.Bags))
	start := 0
	for i := range labeled.Bags {
		b := &labeled.Bags[i]
		bags[i] = Bag{Start: start, N: len(b.Instances), Labels: b.Labels}
		start += len(b.Instances)
	}
	rng := rand.New(rand.NewPCG(uint64(opt.Seed), 0x6d696d6c))
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
		if w, err = metriclearn.Train(xsel, lab, k); err != nil {
			return learned{}, fmt.Errorf("mimlca fit: %w", err)
		}
	}
	assigned := make([][]int, len(bags))
	for i, b := range bags {
		assigned[i] = res.Assigned[b.Start : b.Start+b.N]
	}
	return learned{labeled: labeled, proj: fm.Projection(w), assigned: assigned, res: res}, nil
}

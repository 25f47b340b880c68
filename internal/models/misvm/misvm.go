// Package misvm implements the two multi-instance SVM heuristics of Andrews,
// Tsochantaridis and Hofmann, "Support Vector Machines for Multiple-Instance
// Learning", NIPS 2002, as re-implemented for comparison in the SyMIL paper
// (Durand et al. 2018, Table IV: linear kernels, random latent
// initialisation, the same splits):
//
//   - mi-SVM ("mi-svm"): instance labels in positive bags are latent. An SVM
//     is trained on every instance (negative-bag instances −1), the
//     positive-bag instances are relabeled by the sign of their score, and a
//     positive bag left without a positive instance gets its top-scoring one
//     as positive; repeated until the labels are stable.
//   - MI-SVM ("misvm"): one latent witness per positive bag. An SVM is trained
//     on the witnesses (+1) and on every negative-bag instance (−1), then
//     each witness becomes its bag's top-scoring instance; repeated until the
//     witnesses are stable.
//
// Both predict a bag positive when its best instance scores above zero, and
// run one class against the rest on multi-label bags, producing the same
// model as SyMIL (package ovr). Features are standardised (param scale) and a regularised
// bias is appended, as for linear SyMIL, and the linear SVM of each round is
// trained with the same stochastic sub-gradient schedule: Pegasos steps
// η_τ = 1/(τ + C·mean‖x‖²) on ½‖w‖² + C/(2N⁺) Σ_pos hinge + C/(2N⁻) Σ_neg
// hinge over the N training instances of the round (class-balanced like
// SyMIL's n/n^± weights), averaging the iterates of the
// second half of the epochs, warm-started from the previous round.
//
// Kernels. With kernel=linear the SVM of each round is the primal SGD
// above. With rbf (exp(−γ‖x − z‖²)) or poly ((γ⟨x, z⟩ + coef0)^degree) it is
// trained in the dual by SMO (package svm) on the kernel matrix of all
// training instances, computed once per fit; the boxes are class balanced
// (C/(2N⁺), C/(2N⁻)) so the objective is the linear one's, and the bias is
// the SVM's own (not regularised; param bias applies to linear only). The
// width rule when gamma is 0: γ = 1/(d·Var) over all entries of the scaled
// training instances (scikit-learn's gamma="scale"; 1/d after z-scores).
// The default kernel=auto is rbf while the kernel matrix fits gram_limit
// and linear beyond; the kernels start from Andrews' initialisation (one
// run) and choose C and γ by inner 3-fold cross-validation on the training
// bags (select=cv), because the best C and γ differ from set to set (Musk1,
// Elephant and a 4-feature toy each want another C). The inner CV works on
// the instances as the fit scales them (the scaler fitted on all training
// instances, no label used), so that one kernel matrix per γ serves every
// inner fold and C value, and it warm-starts the relabeling rounds of its
// fits (select_outer.go, cvScoresOuter); the final fit is the one
// select=none trains with the chosen C and γ, on the kernel matrix the
// selection's pair matrix gives.
//
// Parameters (FitOptions.Params; unknown keys are rejected) are declared
// once, with their types, ranges, defaults and docs, by params below
// (`retrainer eval --list-params misvm` and docs/models.md show them).
// init=bag is Andrews' initialisation: every instance of a positive bag
// positive, the witness nearest the bag mean, for the first restart and
// random ones for the others, as misvm's "non-random start" then random
// restarts; init=random draws the latent labels and witnesses at random,
// as the SyMIL paper does for every method.
//
// Sparse data (mil.Bag.Sparse, text bags) trains without densifying: scale
// defaults to unit (maxabs and none are the other choices that keep zeros
// zero), kernel=auto means linear, select defaults to cv for every kernel,
// and a step of the linear SGD costs the instance's non-zeros (see
// sparse.go). The models are the dense path's on
// the same data and parameters (TestSparseMatchesDense).
package misvm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// Kind names.
const (
	MISVMName = "misvm"
	MiSVMName = "mi-svm"
)

// MISVMKind returns the MI-SVM (bag-level, witness) kind.
func MISVMKind() models.Kind {
	return kind(MISVMName, "MI-SVM (Andrews et al. 2002): one witness per positive bag", false)
}

// MiSVMKind returns the mi-SVM (instance-level labels) kind.
func MiSVMKind() models.Kind {
	return kind(MiSVMName, "mi-SVM (Andrews et al. 2002): latent instance labels", true)
}

func kind(name, desc string, instance bool) models.Kind {
	return models.Kind{
		Name:          name,
		Description:   desc + ", linear, RBF or polynomial kernel, one-vs-rest over the label set",
		InstanceLevel: true,
		Params:        ParamSpecs(),
		Sparse:        true,
		Fit: func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
			return Fit(ctx, train, opt, instance)
		},
		Decode: func(meta models.Meta, state []byte) (models.Model, error) {
			return ovr.Decode(meta, state)
		},
	}
}

// Config holds the parsed parameters.
type Config struct {
	C        float64
	Epochs   int
	Iters    int
	Restarts int
	Init     string
	Bias     bool
	Scale    ovr.Scaling
	// Kernel is linear (primal SGD), rbf or poly (dual SMO).
	Kernel string
	// Gamma is the kernel width (rbf) or scale (poly); 0 means GammaScale.
	Gamma     float64
	Degree    int
	Coef0     float64
	GramLimit int
	// Tol is the SMO stopping tolerance of the kernel SVMs.
	Tol float64

	// Select is cv (choose C, and gamma for rbf / poly, by inner
	// cross-validation on the training bags) or none.
	Select string

	restartsSet bool
}

// resolve fixes what depends on the training set: kernel=auto becomes rbf
// when the kernel matrix of n instances fits gram_limit and linear
// otherwise, and init and restarts get their kernel's defaults. Andrews'
// start from the bags with a single run is what the kernel SVMs need
// (Musk1, 5×10-fold, C = 10⁴: MI-SVM 86.9 / mi-SVM 86.0 against 85.8 /
// 86.0 with three restarts and 83.2 / 83.5 from random starts); the linear
// kernel keeps the SyMIL paper's protocol (three random starts), which its
// Table IV reproduction needs.
func (c Config) resolve(n int) Config {
	if c.Kernel == KernelAuto {
		c.Kernel = KernelRBF
		if n > c.GramLimit {
			c.Kernel = KernelLinear
		}
	}
	if c.Init == "" {
		c.Init = "random"
		if c.Kernel != KernelLinear {
			c.Init = "bag"
		}
	}
	if !c.restartsSet && c.Kernel == KernelLinear {
		c.Restarts = 3
	}
	if c.Select == "" {
		c.Select = "none"
		if c.Kernel != KernelLinear {
			c.Select = "cv"
		}
	}
	return c
}

var _ models.Model = (*ovr.Model)(nil)

// params declares every key of Config once, shared by mi-SVM and MI-SVM:
// its type, range, doc and the field it sets; ParamSpecs and ParseParams
// read it. C, restarts, init and select show no default: theirs follow
// the kernel, which kernel=auto chooses only when it sees the training set
// (Config.resolve).
func params() models.Decls[Config] {
	return models.Decls[Config]{
		models.Float("C", func(c *Config) *float64 { return &c.C }, "SVM trade-off (default 10000; with select=cv chosen among 1e2, 1e3, 1e4 unless given)").Above(0).DefaultVaries(),
		models.Int("epochs", func(c *Config) *int { return &c.Epochs }, "SGD passes over the training instances per relabeling round").AtLeast(1),
		models.Int("iters", func(c *Config) *int { return &c.Iters }, "maximum relabeling rounds").AtLeast(1),
		models.Int("restarts", func(c *Config) *int { return &c.Restarts }, "initialisations, lowest objective kept (default 3 for linear, 1 for rbf / poly)").AtLeast(1).DefaultVaries(),
		models.Enum("init", func(c *Config) *string { return &c.Init }, []string{"random", "bag"},
			"random latent labels (the SyMIL paper's protocol; default for linear) or Andrews' start from the bags first (default for rbf / poly)").Optional(),
		models.Bool("bias", func(c *Config) *bool { return &c.Bias }, "append a regularised bias"),
		models.Enum("scale", func(c *Config) *ovr.Scaling { return &c.Scale }, ovr.Scalings,
			"feature transform fitted on the training instances (unit: instance / norm; zunit: z-score then unit; minmax: [0, 1]; maxabs: feature / max |feature|); default zscore on dense data; sparse data: unit by default, and only unit, maxabs or none").DefaultVaries(),
		models.Enum("kernel", func(c *Config) *string { return &c.Kernel }, []string{KernelAuto, KernelLinear, KernelRBF, KernelPoly},
			"instance SVM: linear (primal SGD), rbf / poly (dual SMO on the kernel matrix); auto: rbf up to gram_limit training instances, else linear"),
		models.Float("gamma", func(c *Config) *float64 { return &c.Gamma }, "rbf width exp(-gamma·|x-z|²) or poly scale; 0: 1/(d·variance of the scaled instances)").AtLeast(0),
		models.Int("degree", func(c *Config) *int { return &c.Degree }, "poly kernel degree (gamma·<x,z> + coef0)^degree").AtLeast(1).AtMost(10),
		models.Float("coef0", func(c *Config) *float64 { return &c.Coef0 }, "poly kernel constant").Finite(),
		models.Int("gram_limit", func(c *Config) *int { return &c.GramLimit }, "maximum training instances for rbf / poly (kernel matrix memory: 8·n² bytes)").AtLeast(1),
		models.Float("tol", func(c *Config) *float64 { return &c.Tol }, "SMO stopping tolerance (maximal KKT violation) of rbf / poly").Above(0),
		models.Enum("select", func(c *Config) *string { return &c.Select }, []string{"cv", "none"},
			"cv: choose C (and gamma for rbf / poly) among C 1e2,1e3,1e4 x gamma 1/4,1,4 times the rule by inner 3-fold CV on the training bags (default for rbf / poly); none: the given values (default for linear)").Optional(),
	}
}

// defaultConfig is the configuration before any parameter is read.
func defaultConfig() Config {
	return Config{C: 1e4, Epochs: 50, Iters: 20, Restarts: 1, Bias: true, Scale: ovr.ScaleZScore, Kernel: KernelAuto,
		Degree: 3, Coef0: 1, GramLimit: 6000, Tol: 1e-3}
}

// ParamSpecs declares the keys ParseParams reads (see the package
// documentation), shared by mi-SVM and MI-SVM.
func ParamSpecs() []models.ParamSpec { return params().Specs(defaultConfig()) }

// ParseParams reads the parameters with the documented defaults.
func ParseParams(p models.Params) (Config, error) {
	cfg := defaultConfig()
	d := params()
	if err := d.Bind(p, &cfg); err != nil {
		return Config{}, fmt.Errorf("misvm: %w", err)
	}
	if err := d.Check("misvm", cfg); err != nil {
		return Config{}, err
	}
	_, cfg.restartsSet = p["restarts"]
	return cfg, nil
}

// Fit trains mi-SVM (instance true) or MI-SVM (instance false), one class
// against the rest. Unlabeled bags are ignored; a class without positive
// (negative) training bags gets a constant scorer saying no (yes).
func Fit(ctx context.Context, train *mil.Dataset, opt models.FitOptions, instance bool) (*ovr.Model, error) {
	cfg, err := ParseParams(opt.Params)
	if err != nil {
		return nil, err
	}
	sparse := train.IsSparse()
	var data *ovr.Data
	if sparse {
		cfg = sparseConfig(cfg, opt.Params)
		data, err = ovr.PrepareSparse(train, cfg.Scale)
	} else {
		data, err = ovr.Prepare(train, cfg.Scale)
	}
	if err != nil {
		return nil, err
	}
	cfg = cfg.resolve(len(data.Rows) + len(data.Sparse))
	var pb []float64 // the dense kernels' pair matrix, if the selection computed it
	if cfg.Select == "cv" {
		rule := GammaScale(data.Rows)
		if sparse {
			rule = GammaScaleSparse(data.Sparse, train.Dim)
		}
		var c candidate
		c, pb, err = selectParams(ctx, train, data, opt, instance, cfg, rule)
		if err != nil {
			return nil, err
		}
		cfg.C, cfg.Gamma = c.C, c.Gamma
	}
	s := newSolver(cfg, data, train.Dim, instance)
	var ker *kernelData
	if cfg.Kernel != KernelLinear {
		switch {
		case sparse:
			ker, err = newKernelDataSparse(cfg, data.Sparse, train.Dim)
		case pb != nil:
			// The selection's pair matrix of these rows: the floats
			// newKernelData computes.
			ker, err = newKernelDataFrom(cfg, data.Rows, pb, pb)
		default:
			ker, err = newKernelData(cfg, data.Rows)
		}
		if err != nil {
			return nil, err
		}
	}
	name := MISVMName
	if instance {
		name = MiSVMName
	}
	fits, err := fitClasses(ctx, data, len(train.Classes), s, ker, opt)
	if err != nil {
		return nil, err
	}
	st := ovr.State{Rule: ovr.Max, Scaler: data.Scaler, Scorers: make([]ovr.Scorer, len(fits))}
	d := train.Dim
	linear := func(w []float64) ovr.Scorer {
		sc := ovr.Scorer{W: slices.Clone(w[:d])}
		if cfg.Bias {
			sc.B = w[d]
		}
		return sc
	}
	for c, f := range fits {
		switch l := f.l.(type) {
		case nil:
			st.Scorers[c] = ovr.Scorer{W: make([]float64, d), B: f.constant}
		case *kernelLearner:
			st.Scorers[c] = l.scorer()
		case *linearLearner:
			st.Scorers[c] = linear(l.w)
		case *sparseLinearLearner:
			st.Scorers[c] = linear(l.w)
		}
	}
	meta := models.Meta{Kind: name, Classes: train.Classes, Dim: train.Dim, InstanceLevel: true, Params: opt.Params}
	return ovr.New(meta, st)
}

// newSolver builds the relabeling solver of one fit on prepared data:
// the rows with the bias feature appended (linear) and the SGD step offset
// from their mean squared norm.
func newSolver(cfg Config, data *ovr.Data, dim int, instance bool) *solver {
	return solverRows(cfg, data, dim).withConfig(cfg, instance)
}

// solverRows is the part of newSolver that depends on the data and on
// param bias only, which the inner cross-validation builds once per fold.
func solverRows(cfg Config, data *ovr.Data, dim int) *solver {
	x := data.Rows
	if cfg.Kernel != KernelLinear && data.Sparse == nil {
		// A dense kernel fit reads its rows only for the initial
		// witnesses (nearestMean), which take the bias feature into
		// account without a copy of the rows carrying it; the SGD
		// step offset is the linear SVM's.
		return &solver{x: x, width: dim, virtualBias: cfg.Bias}
	}
	if cfg.Bias {
		x = make([][]float64, len(data.Rows))
		for i, r := range data.Rows {
			x[i] = append(slices.Clip(r), 1)
		}
	}
	xs := withBias(data.Sparse, dim, cfg.Bias)
	r2 := 0.0
	for _, row := range x {
		r2 += dot(row, row)
	}
	for _, row := range xs {
		r2 += row.SqNorm()
	}
	r2 /= float64(len(x) + len(xs))
	width := dim
	if cfg.Bias {
		width++
	}
	return &solver{x: x, xs: xs, width: width, r2: r2}
}

// withConfig returns a copy of the rows s with configuration cfg (whose
// bias must be the one s was built with).
func (s *solver) withConfig(cfg Config, instance bool) *solver {
	c := *s
	c.cfg, c.instance = cfg, instance
	c.tau0 = math.Max(1, cfg.C*s.r2)
	return &c
}

// classFit is one class's trained SVM before it becomes a served scorer:
// the learner of the restart with the lowest objective, or, for a class
// whose training bags are all negative (positive), no learner and the
// constant score −1 (+1).
type classFit struct {
	l        learner
	constant float64
}

// fitClasses trains one class against the rest for each of the k classes
// on prepared data, with the kernel matrix ker (nil: the linear SGD). The
// final fit and the inner cross-validation of select=cv share it, so that
// a candidate scored on an inner fold is the model Fit would train there.
func fitClasses(ctx context.Context, data *ovr.Data, k int, s *solver, ker *kernelData, opt models.FitOptions) ([]classFit, error) {
	cfg := s.cfg
	fits := make([]classFit, k)
	for c := range k {
		pos := data.Positive(c)
		np := 0
		for _, v := range pos {
			if v {
				np++
			}
		}
		if np == 0 || np == len(pos) {
			fits[c].constant = -1
			if np > 0 {
				fits[c].constant = 1
			}
			continue
		}
		posRows := 0
		for i, b := range data.Bags {
			if pos[i] {
				posRows += len(b)
			}
		}
		ls := make([]learner, cfg.Restarts)
		objs := make([]float64, cfg.Restarts)
		err := ovr.Parallel(ctx, opt.Workers, cfg.Restarts, func(ctx context.Context, r int) error {
			rng := rand.New(rand.NewPCG(ovr.Seed(opt.Seed, c), uint64(r)))
			switch {
			case ker != nil:
				// The relabeling scores the positive bags' rows (and the
				// objective every example's): all rows at once pays
				// from about a quarter of them.
				ls[r] = &kernelLearner{k: ker, noObjective: cfg.Restarts == 1, warm: s.warm, shrink: s.warm,
					scoreAll: cfg.Restarts > 1 || 4*posRows >= len(data.Rows)}
			case s.xs != nil:
				ls[r] = &sparseLinearLearner{s: s, rng: rng}
			default:
				ls[r] = &linearLearner{s: s, rng: rng}
			}
			obj, err := s.fit(ctx, data.Bags, pos, rng, ls[r], cfg.Init == "bag" && r == 0)
			objs[r] = obj
			return err
		})
		if err != nil {
			return nil, err
		}
		best := 0
		for r := range objs {
			if objs[r] < objs[best] {
				best = r
			}
		}
		fits[c].l = ls[best]
		if opt.Progress != nil {
			opt.Progress(c+1, k)
		}
	}
	return fits, nil
}

type solver struct {
	cfg Config
	x   [][]float64
	// xs holds the rows instead of x for sparse data; width is the
	// rows' dimension (bias included).
	xs       []mil.SparseVec
	width    int
	r2       float64 // mean squared norm of the rows
	tau0     float64
	instance bool
	// warm starts the kernel SVM of each relabeling round from the
	// previous round's alphas; only the inner cross-validation of
	// select=cv sets it (see innerFold.fit).
	warm bool
	// fullRounds keeps training a kernel SVM on the labels of the
	// previous round when a forced label was the only change (the former
	// stopping rule; the reference of TestKernelStopMatchesFullRounds).
	fullRounds bool
	// virtualBias: x lacks the bias feature (1) that param bias appends
	// (dense kernels, which read x for nearestMean only).
	virtualBias bool
	// nearest[i], when set, is nearestMean of bag i of the data (the
	// inner cross-validation computes it once per fold for its nine
	// candidates).
	nearest []int
}

func dot(a, b []float64) float64 {
	v := 0.0
	for j, x := range a {
		v += x * b[j]
	}
	return v
}

// example is one SVM training instance: a row and its ±1 label.
type example struct {
	row int
	pos bool
}

// learner trains the SVM of one relabeling round on the examples ex and
// returns the score of every training row under it and the SVM's primal
// objective. A learner carries state from round to round (the linear one
// warm-starts), so each restart has its own.
type learner interface {
	train(ctx context.Context, ex []example) (score func(row int) float64, obj float64, err error)
}

// fit runs the alternating heuristic from a random (or Andrews) latent
// initialisation and returns the objective of the last round's SVM; the
// learner holds that SVM.
func (s *solver) fit(ctx context.Context, bags [][]int, pos []bool, rng *rand.Rand, l learner, andrews bool) (float64, error) {
	// lab[i][j]: latent label of instance j of positive bag i (mi-SVM);
	// wit[i]: witness index of positive bag i (MI-SVM).
	lab := make([][]bool, len(bags))
	wit := make([]int, len(bags))
	for i, b := range bags {
		if !pos[i] {
			continue
		}
		lab[i] = make([]bool, len(b))
		switch {
		case andrews:
			for j := range b {
				lab[i][j] = true
			}
			if s.nearest != nil {
				wit[i] = s.nearest[i]
			} else {
				wit[i] = s.nearestMean(b)
			}
		default:
			some := false
			for j := range b {
				lab[i][j] = rng.IntN(2) == 1
				some = some || lab[i][j]
			}
			if !some {
				lab[i][rng.IntN(len(b))] = true
			}
			wit[i] = rng.IntN(len(b))
		}
	}
	obj := math.Inf(1)
	var prev []bool // a positive bag's labels before a relabeling
	for range s.cfg.Iters {
		var ex []example
		for i, b := range bags {
			switch {
			case !pos[i]:
				for _, g := range b {
					ex = append(ex, example{g, false})
				}
			case s.instance:
				for j, g := range b {
					ex = append(ex, example{g, lab[i][j]})
				}
			default:
				ex = append(ex, example{b[wit[i]], true})
			}
		}
		score, o, err := l.train(ctx, ex)
		if err != nil {
			return 0, err
		}
		obj = o
		// changed: some latent label or witness differs from this
		// round's; forced: some positive bag had no instance scoring
		// above 0, so its best one was made positive (mi-SVM).
		changed, forced := false, false
		for i, b := range bags {
			if !pos[i] {
				continue
			}
			best, bestScore := 0, math.Inf(-1)
			some := false
			if s.instance {
				prev = append(prev[:0], lab[i]...)
			}
			for j, g := range b {
				sc := score(g)
				if sc > bestScore {
					best, bestScore = j, sc
				}
				if s.instance {
					lab[i][j] = sc > 0
					some = some || lab[i][j]
				}
			}
			if s.instance {
				if !some {
					lab[i][best], forced = true, true
				}
				changed = changed || !slices.Equal(lab[i], prev)
			} else if best != wit[i] {
				wit[i], changed = best, true
			}
		}
		if !changed && !(forced && s.roundsAfterForced(l)) {
			break
		}
	}
	return obj, nil
}

// roundsAfterForced reports whether a round whose labels equal the
// previous round's is trained again when some positive bag's best instance
// was forced positive (mi-SVM). The linear SGD continues from round to
// round, so another round moves its model, and it keeps the rule it was
// tuned with: a forced label counts as a change. A kernel SVM is a
// function of its round's examples (SMO from 0 is deterministic), so the
// same labels would train the same SVM again, up to the iteration cap:
// it stops, with the model it would have ended with
// (TestKernelStopMatchesFullRounds). The rounds it saves are most of
// mi-SVM's at small C (a Musk1 fit at C = 10² ran all 20 rounds, the last
// 14 of them repeating the same labels).
func (s *solver) roundsAfterForced(l learner) bool {
	_, kernel := l.(*kernelLearner)
	return !kernel || s.fullRounds
}

// linearLearner is the primal SGD SVM, warm-started from round to round.
type linearLearner struct {
	s   *solver
	w   []float64
	tau float64
	rng *rand.Rand
}

func (l *linearLearner) train(ctx context.Context, ex []example) (func(int) float64, float64, error) {
	if l.w == nil {
		l.w = make([]float64, len(l.s.x[0]))
	}
	w, obj, err := l.s.svm(ctx, ex, l.w, &l.tau, l.rng)
	if err != nil {
		return nil, 0, err
	}
	l.w = w
	return func(row int) float64 { return dot(w, l.s.x[row]) }, obj, nil
}

// nearestMean returns the instance of bag b closest to the bag mean, the
// discrete stand-in for Andrews' mean initialisation of MI-SVM.
func (s *solver) nearestMean(b []int) int {
	if s.xs != nil {
		return s.nearestMeanSparse(b)
	}
	// With virtualBias the rows lack the bias feature, which is 1: it
	// is the last entry of the mean and of each distance, the floats the
	// rows with it appended give (TestNearestMeanVirtualBias).
	d0 := len(s.x[0])
	mean := make([]float64, d0+1)
	for _, g := range b {
		for j, v := range s.x[g] {
			mean[j] += v / float64(len(b))
		}
		if s.virtualBias {
			mean[d0] += 1 / float64(len(b))
		}
	}
	best, bestD := 0, math.Inf(1)
	for j, g := range b {
		d := 0.0
		for k, v := range s.x[g] {
			d += (v - mean[k]) * (v - mean[k])
		}
		if s.virtualBias {
			d += (1 - mean[d0]) * (1 - mean[d0])
		}
		if d < bestD {
			best, bestD = j, d
		}
	}
	return best
}

// svm trains the class-balanced linear SVM on ex by Pegasos-style SGD from
// w (warm start), and returns the averaged iterate and its objective.
func (s *solver) svm(ctx context.Context, ex []example, w []float64, tau *float64, rng *rand.Rand) ([]float64, float64, error) {
	n := len(ex)
	weight := balancedWeight(ex)
	w = slices.Clone(w)
	avg := make([]float64, len(w))
	steps := s.cfg.Epochs * n
	half, counted := steps/2, 0
	for step := range steps {
		if step%n == 0 {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
		}
		e := ex[rng.IntN(n)]
		y := -1.0
		if e.pos {
			y = 1
		}
		eta := 1 / (*tau + s.tau0)
		*tau++
		margin := y * dot(w, s.x[e.row])
		for j := range w {
			w[j] *= 1 - eta
		}
		if margin < 1 {
			f := eta * s.cfg.C * weight(e.pos) * y
			for j, v := range s.x[e.row] {
				w[j] += f * v
			}
		}
		if step >= half {
			counted++
			r := 1 / float64(counted)
			for j := range avg {
				avg[j] += r * (w[j] - avg[j])
			}
		}
	}
	if counted == 0 {
		copy(avg, w)
	}
	obj := 0.5 * dot(avg, avg)
	for _, e := range ex {
		y := -1.0
		if e.pos {
			y = 1
		}
		obj += s.cfg.C / float64(n) * weight(e.pos) * math.Max(0, 1-y*dot(avg, s.x[e.row]))
	}
	return avg, obj, nil
}

// balancedWeight returns the class-balanced example weight of the SVM loss:
// n / (2·n⁺) for a positive example and n / (2·n⁻) for a negative one.
func balancedWeight(ex []example) func(pos bool) float64 {
	n, np := len(ex), 0
	for _, e := range ex {
		if e.pos {
			np++
		}
	}
	return func(pos bool) float64 {
		if pos {
			return float64(n) / float64(2*max(np, 1))
		}
		return float64(n) / float64(2*max(n-np, 1))
	}
}

package orlr

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
	"github.com/mimlstream/mimlstream/internal/solver/softmax"
)

// Fit trains an ORed-LR model on the labeled bags of train by EM.
func Fit(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (*Model, error) {
	m, _, err := fit(ctx, train, opt)
	return m, err
}

// trace records the EM run (for tests and logs).
type trace struct {
	// LogLik[k] is the log-likelihood Σ_b log p(Y_b|X_b, w^(k)) of the bags
	// used at iteration k, computed by the E-step.
	LogLik []float64
	// Objective[k] is LogLik[k] − N·(l2/2)‖W^(k)‖² (N the instances of
	// the bags used, bias not penalised): the quantity EM with an L2
	// penalty increases, equal to LogLik when l2 = 0.
	Objective []float64
	Bags      int
	// MSteps[k] is the number of optimizer iterations of the k-th M-step,
	// Evaluations the objective-and-gradient evaluations of all of them.
	MSteps      []int
	Evaluations int
}

// trainBag is a labeled training bag after validation and pruning; its
// instances are rows [start, start+n) of the design matrix.
type trainBag struct {
	start, n int
	// labels are the classes the E-step allows (the bag label, plus the
	// unknown class when the model has one); bits of opt mark those that
	// may be absent (the unknown class, unless the bag label names it).
	labels []int
	opt    int
}

func fit(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (*Model, *trace, error) {
	cfg, err := ParseConfig(opt.Params)
	if err != nil {
		return nil, nil, err
	}
	sparse := train.IsSparse() && cfg.Kernel != KernelRBF
	if train.IsSparse() && !sparse {
		train = train.Densified() // the RBF features are dense anyway
	}
	if _, given := opt.Params["scale"]; sparse && !given {
		cfg.Scale = string(ovr.ScaleUnit) // the z-score would fill every zero
	}
	dim := train.Dim
	if len(train.Classes) == 0 || dim <= 0 {
		return nil, nil, fmt.Errorf("orlr: dataset has %d classes and dimension %d", len(train.Classes), dim)
	}
	classes, unk := modelClasses(train.Classes, cfg.Unknown)
	nc := len(classes)
	bags, err := selectBags(train, cfg)
	if err != nil {
		return nil, nil, err
	}
	if len(bags) == 0 {
		return nil, nil, fmt.Errorf("orlr: %w: no labeled training bags", models.ErrBadInput)
	}
	if cfg.Prior == "" {
		cfg.Prior = PriorUniform
		if sparse {
			cfg.Prior = PriorModel
		}
	}
	if searchL2(&cfg, opt.Params, sparse) {
		if cfg.L2, _, err = selectL2(ctx, train, opt, cfg); err != nil {
			return nil, nil, err
		}
	}

	// Instances in bag order: the design matrix rows.
	var xs [][]float64
	var sxs []mil.SparseVec // instead of xs for sparse data
	var tb []trainBag
	for _, b := range bags {
		labels, optional := allowedClasses(b.Labels, unk)
		if sparse {
			tb = append(tb, trainBag{start: len(sxs), n: b.Len(), labels: labels, opt: optional})
			sxs = appendSparse(sxs, b)
			continue
		}
		tb = append(tb, trainBag{start: len(xs), n: len(b.Instances), labels: labels, opt: optional})
		xs = append(xs, b.Instances...)
	}

	m := &Model{cfg: cfg,
		meta: models.Meta{Kind: Name, Classes: classes, Dim: dim, InstanceLevel: true, Params: cfg.Params()}}
	if len(classes) > len(train.Classes) {
		// The unknown class was appended: bags over the data's own
		// vocabulary (the stream's) still index this model's classes.
		m.meta.ImplicitClasses = classes[len(train.Classes):]
	}
	warm, ok := opt.Warm.(*Model)
	if opt.Warm != nil && !ok {
		slog.Warn("orlr: warm-start model is not an orlr model; starting from zero", "kind", opt.Warm.Meta().Kind)
	}
	if warm != nil && !warm.sameShape(classes, dim, cfg) {
		slog.Warn("orlr: warm-start model has another shape; starting from zero")
		warm = nil
	}
	rng := rand.New(rand.NewPCG(uint64(opt.Seed), 0x6f726c72))
	// The feature transform is fitted on the training instances, or kept
	// from the warm model so that its weights (and kernel dictionary) keep
	// their meaning.
	if warm != nil {
		m.scaler = warm.scaler
	} else if sparse {
		if m.scaler, err = fitScalerSparse(cfg.Scale, sxs, dim); err != nil {
			return nil, nil, err
		}
	} else if m.scaler, err = fitScaler(cfg.Scale, xs, dim); err != nil {
		return nil, nil, err
	}
	if sparse && m.scaler != nil {
		if !m.scaler.KeepsSparsity() {
			return nil, nil, fmt.Errorf("orlr: %w: the warm model's scale=%s would densify sparse data", models.ErrBadInput, m.scaler.Mode)
		}
		for i, x := range sxs {
			sxs[i] = m.scaler.ApplySparse(x)
		}
	}
	if m.scaler != nil {
		scaled := make([][]float64, len(xs))
		for i, x := range xs {
			scaled[i] = m.scaler.Apply(make([]float64, dim), x)
		}
		xs = scaled
	}
	features := xs
	if cfg.Kernel == KernelRBF {
		if warm != nil {
			m.kern = warm.kern // same feature space: the weights carry over
		} else if m.kern, err = newRBF(xs, cfg.KernelS, cfg.DictFrac, rng); err != nil {
			return nil, nil, fmt.Errorf("orlr: %w", err)
		}
		features = make([][]float64, len(xs))
		for i, x := range xs {
			features[i] = make([]float64, len(m.kern.Dict))
			m.kern.mapInto(x, features[i])
		}
	}
	fdim := dim
	if m.kern != nil {
		fdim = len(m.kern.Dict)
	}
	var prob *softmax.Problem
	if sparse {
		prob, err = softmax.NewSparseProblem(nc, fdim, sxs, nil, cfg.L2, opt.Workers)
	} else {
		prob, err = softmax.NewProblem(nc, fdim, features, nil, cfg.L2, opt.Workers)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("orlr: %w", err)
	}
	m.lr = softmax.New(nc, fdim)
	if warm != nil {
		copy(m.lr.W, warm.lr.W)
	}

	tr := &trace{Bags: len(tb)}
	em := &emState{cfg: cfg, prob: prob, bags: tb, lr: m.lr, workers: opt.Workers}
	step := 0.0
	// One L-BFGS serves every M-step: its curvature pairs carry over from
	// one EM iteration to the next (see softmax.LBFGS).
	var lbfgs softmax.LBFGS
	prevObj := math.Inf(-1)
	for it := 0; it < cfg.Iters; it++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		active := em.sample(rng)
		ll, err := em.eStep(ctx, active)
		if err != nil {
			return nil, nil, err
		}
		tr.LogLik = append(tr.LogLik, ll)
		obj := ll - float64(em.rows(active))*penalty(cfg.L2, m.lr)
		tr.Objective = append(tr.Objective, obj)
		mp := em.mProblem(active)
		var surrogate float64
		switch cfg.MStep {
		case MStepLBFGS:
			// Also a GEM step: every accepted L-BFGS step increases g.
			var res softmax.LBFGSResult
			res, err = lbfgs.Maximize(ctx, mp, m.lr.W, cfg.MSteps, 1e-9, cfg.MTol)
			surrogate = res.Value
			tr.MSteps = append(tr.MSteps, res.Iterations)
			tr.Evaluations += res.Evaluations
		default:
			var res softmax.AscendResult
			res, err = mp.Ascend(ctx, m.lr.W, cfg.MSteps, cfg.MTol, step)
			surrogate, step = res.Value, res.StepSize
			tr.MSteps = append(tr.MSteps, res.Steps)
			tr.Evaluations += res.Evaluations
		}
		if err != nil {
			return nil, nil, err
		}
		if opt.Progress != nil {
			opt.Progress(it+1, cfg.Iters)
		}
		slog.Debug("orlr EM", "iter", it+1, "loglik", ll, "surrogate", surrogate)
		if cfg.Tol > 0 && cfg.Subset == 1 && obj-prevObj <= cfg.Tol*math.Abs(obj) {
			break
		}
		prevObj = obj
	}
	if cfg.Prior == PriorUniform {
		if sparse {
			m.classPrior = classPrior(nc, len(sxs), func(i int, out []float64) { m.lr.LogitsSparse(sxs[i], out) })
		} else {
			m.classPrior = classPrior(nc, len(features), func(i int, out []float64) { m.lr.Logits(features[i], out) })
		}
	}
	return m, tr, nil
}

// modelClasses returns the model's vocabulary and the index of its unknown
// class (-1 without one): with unknown, the data's class named UnknownClass
// if it has one (Pham's novel-class files do), else that name appended.
func modelClasses(classes []string, unknown bool) ([]string, int) {
	if !unknown {
		return classes, -1
	}
	if i := slices.Index(classes, UnknownClass); i >= 0 {
		return classes, i
	}
	return append(slices.Clip(classes), UnknownClass), len(classes)
}

// allowedClasses returns the classes the E-step allows for a bag label and
// the mask of those that may be absent: the unknown class unk is appended
// as optional unless the label names it (then it is required, like any
// class of the label).
func allowedClasses(labels []int, unk int) ([]int, int) {
	if unk < 0 || slices.Contains(labels, unk) {
		return labels, 0
	}
	return append(slices.Clip(labels), unk), 1 << len(labels)
}

func (m *Model) sameShape(classes []string, dim int, cfg Config) bool {
	if m.meta.Dim != dim || !slices.Equal(m.meta.Classes, classes) {
		return false
	}
	if (m.kern != nil) != (cfg.Kernel == KernelRBF) {
		return false
	}
	// The warm model's transform is reused: it must be the one asked for.
	mode := ovr.ScaleNone
	if m.scaler != nil {
		mode, _ = ovr.ParseScaling(string(m.scaler.Mode))
	}
	return string(mode) == cfg.Scale
}

// fitScaler returns the transform named by mode fitted on xs, or nil for
// none (the model then reads raw features, as models older than the option).
func fitScaler(mode string, xs [][]float64, dim int) (*ovr.Scaler, error) {
	if mode == string(ovr.ScaleNone) {
		return nil, nil
	}
	sc, err := ovr.FitScaler(ovr.Scaling(mode), xs, dim)
	if err != nil {
		return nil, fmt.Errorf("orlr: %w", err)
	}
	return &sc, nil
}

// selectBags validates the labeled bags, drops the pruned ones (Section
// 6.6.1) and enforces the label-set limit.
func selectBags(train *mil.Dataset, cfg Config) ([]*mil.Bag, error) {
	_, unk := modelClasses(train.Classes, cfg.Unknown)
	var bags []*mil.Bag
	impossible, empty, labeled := 0, 0, 0
	var firstEmpty string
	for i := range train.Bags {
		b := &train.Bags[i]
		if !b.Labeled() {
			continue // no bag label, no information for the EM
		}
		labeled++
		if err := b.Validate(train.Dim, len(train.Classes)); err != nil {
			return nil, fmt.Errorf("orlr: %w: %w", models.ErrBadInput, err)
		}
		if len(b.Labels) == 0 && unk < 0 {
			// Under the union model a non-empty bag cannot have an empty
			// label unless some class covers instances of no known class.
			// Counted, so that one error describes the whole data set.
			if empty == 0 {
				firstEmpty = b.ID
			}
			empty++
			continue
		}
		if len(b.Labels) > b.Len() {
			// n instances carry at most n classes: the bag has probability
			// zero under the model and nothing can be learned from it.
			impossible++
			continue
		}
		bags = append(bags, b)
	}
	if empty > 0 {
		return nil, fmt.Errorf("orlr: %w: %d of the %d labeled training bags (the first %q) have an empty label set, "+
			"impossible when the bag label is the union of the instance labels; "+
			"--param unknown=true adds a class %q for instances of no known class, which makes them valid",
			models.ErrBadInput, empty, labeled, firstEmpty, UnknownClass)
	}
	if impossible > 0 {
		slog.Warn("orlr: skipping bags with more labels than instances", "bags", impossible)
	}
	if cfg.Prune > 0 {
		cost := func(b *mil.Bag) float64 {
			labels, _ := allowedClasses(b.Labels, unk)
			k := float64(len(labels))
			return float64(b.Len()) * k * math.Exp2(k)
		}
		order := make([]int, len(bags))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return cost(bags[order[a]]) < cost(bags[order[b]]) })
		keep := len(bags) - int(math.Floor(cfg.Prune*float64(len(bags))))
		kept := order[:keep]
		sort.Ints(kept)
		pruned := make([]*mil.Bag, len(kept))
		for i, j := range kept {
			pruned[i] = bags[j]
		}
		bags = pruned
	}
	for _, b := range bags {
		if len(b.Labels) > cfg.MaxLabels {
			return nil, fmt.Errorf("orlr: bag %q has %d labels, limit max_labels=%d: %w", b.ID, len(b.Labels), cfg.MaxLabels, models.ErrLabelSetTooLarge)
		}
	}
	return bags, nil
}

// emState holds what the EM iterations share.
type emState struct {
	cfg     Config
	prob    *softmax.Problem
	bags    []trainBag
	lr      *softmax.Model
	workers int
}

// sample returns the bags of this iteration: all, or a random fraction
// (Section 6.6.2), in index order.
func (e *emState) sample(rng *rand.Rand) []int {
	n := len(e.bags)
	if e.cfg.Subset >= 1 {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all
	}
	k := max(1, int(math.Ceil(e.cfg.Subset*float64(n))))
	idx := rng.Perm(n)[:k]
	sort.Ints(idx)
	return idx
}

// eStep writes the posteriors p(y_bi=c|Y_b, X_b, w) of the active bags into
// the targets of the M-step problem and returns their log-likelihood. Bags
// are shared among workers dynamically, but each bag's result depends only
// on that bag and the log-likelihoods are summed in bag order, so the
// outcome is the same for any number of workers.
func (e *emState) eStep(ctx context.Context, active []int) (float64, error) {
	nc := e.lr.Classes
	d1 := e.lr.Dim + 1
	// The M-step's last evaluation computed the logits at these weights
	// (nil after a stochastic or failed M-step, or before the first one).
	cached := e.prob.CachedLogits(e.lr.W)
	lls := make([]float64, len(active))
	workers := e.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(active))
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s := newBagScratch()
			var logits, view, post [][]float64
			for {
				a := int(next.Add(1) - 1)
				if a >= len(active) || ctx.Err() != nil {
					return
				}
				b := e.bags[active[a]]
				k := len(b.labels)
				for len(logits) < b.n {
					logits = append(logits, make([]float64, nc))
					view = append(view, nil)
					post = append(post, nil)
				}
				for i := 0; i < b.n; i++ {
					row := b.start + i
					if cached != nil {
						view[i] = cached[row*nc : (row+1)*nc]
					} else {
						if e.prob.SX != nil {
							e.lr.LogitsSparse(e.prob.SX[row], logits[i])
						} else {
							e.lr.Logits(e.prob.X[row*d1:row*d1+d1-1], logits[i])
						}
						view[i] = logits[i]
					}
					if cap(post[i]) < k {
						post[i] = make([]float64, k)
					}
					post[i] = post[i][:k]
				}
				ll, err := bagPosteriorsOpt(s, e.cfg.EStep, view[:b.n], b.labels, b.opt, post[:b.n])
				if err != nil {
					errs[w] = fmt.Errorf("orlr: E-step: %w", err)
					return
				}
				lls[a] = ll
				for i := 0; i < b.n; i++ {
					t := e.prob.T[(b.start+i)*nc : (b.start+i+1)*nc]
					clear(t)
					for j, c := range b.labels {
						t[c] = post[i][j]
					}
				}
			}
		}(w)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	total := 0.0
	for _, v := range lls {
		total += v
	}
	return total, nil
}

// rows returns the number of instances of the active bags.
func (e *emState) rows(active []int) int {
	n := 0
	for _, a := range active {
		n += e.bags[a].n
	}
	return n
}

// penalty returns (l2/2)‖W‖² without the biases, the M-step's penalty.
func penalty(l2 float64, lr *softmax.Model) float64 {
	if l2 == 0 {
		return 0
	}
	s := 0.0
	d := lr.Dim
	for c := range lr.Classes {
		for _, v := range lr.W[c*(d+1) : c*(d+1)+d] {
			s += v * v
		}
	}
	return l2 / 2 * s
}

// mProblem returns the M-step objective over the active bags: the whole
// problem, or (stochastic variant, eq. 29) a copy restricted to their rows.
func (e *emState) mProblem(active []int) *softmax.Problem {
	if len(active) == len(e.bags) {
		return e.prob
	}
	nc := e.lr.Classes
	d1 := e.lr.Dim + 1
	sub := &softmax.Problem{Classes: nc, Dim: e.lr.Dim, L2: e.prob.L2, Workers: e.prob.Workers}
	for _, a := range active {
		b := e.bags[a]
		if e.prob.SX != nil {
			sub.SX = append(sub.SX, e.prob.SX[b.start:b.start+b.n]...)
		} else {
			sub.X = append(sub.X, e.prob.X[b.start*d1:(b.start+b.n)*d1]...)
		}
		sub.T = append(sub.T, e.prob.T[b.start*nc:(b.start+b.n)*nc]...)
		sub.N += b.n
	}
	return sub
}

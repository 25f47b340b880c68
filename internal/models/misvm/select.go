package misvm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/mimlstream/mimlstream/internal/folds"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// Grid of select=cv. C spans the range where the kernel SVMs do well on
// the MIL benchmarks (Musk1 best at 10⁴, Elephant at 10³, a 4-feature toy at
// 10²), gamma a factor 4 either side of the width rule. For the linear
// kernel only C is searched.
var (
	selectC      = []float64{1e2, 1e3, 1e4}
	selectGammas = []float64{0.25, 1, 4}
)

// selectFolds is k of the inner cross-validation; selectStream is its PCG
// stream, apart from the outer folds' streams (one per repeat).
const (
	selectFolds  = 3
	selectStream = 0x6d69737666
)

// candidate is one grid point as explicit parameters.
type candidate struct {
	C, Gamma float64
}

// selectParams chooses C (and gamma for rbf / poly) by inner k-fold
// cross-validation on the labeled training bags, by the mean per-class bag
// accuracy (1 − Hamming loss) of the held-out bags; ties go to the first
// candidate in grid order (small gamma, then small C: the smoother model).
// A parameter given explicitly is not searched. rule is the width rule's
// gamma on the scaled training instances, so that the grid's absolute
// gammas are the ones the final fit uses.
//
// A dense rbf or poly kernel is selected with the instances scaled by the
// selecting fit's scaler (cvScoresOuter), whose pair matrix of data's rows
// it returns for the final fit to reuse (nil otherwise).
func selectParams(ctx context.Context, train *mil.Dataset, data *ovr.Data, opt models.FitOptions, instance bool, cfg Config, rule float64) (candidate, []float64, error) {
	labeled := data.BagIndex
	cands := grid(opt, cfg, rule)
	if len(cands) == 1 || len(labeled) < 2*selectFolds {
		return cands[len(cands)/2], nil, nil
	}
	fs, err := folds.KFold(len(labeled), selectFolds, opt.Seed, selectStream)
	if err != nil {
		return candidate{}, nil, fmt.Errorf("misvm select: %w", err)
	}
	var score, pb []float64
	if cfg.Kernel != KernelLinear && !train.IsSparse() {
		score, pb, err = cvScoresOuter(ctx, train, data, fs, opt, instance, cfg.Kernel, cands, outerCV{warm: true})
	} else {
		score, err = cvScoresByFit(ctx, train, labeled, fs, opt, instance, cfg, cands)
	}
	if err != nil {
		return candidate{}, nil, err
	}
	return cands[bestCandidate(score, len(fs))], pb, nil
}

// bestCandidate returns the candidate with the highest summed held-out
// accuracy over the k folds of score[c*k+f], the first in grid order on a
// tie.
func bestCandidate(score []float64, k int) int {
	best, bestScore := 0, -1.0
	for c := range len(score) / k {
		s := 0.0
		for f := range k {
			s += score[c*k+f]
		}
		if s > bestScore+1e-12 {
			best, bestScore = c, s
		}
	}
	return best
}

// grid returns the candidates of select=cv in grid order (gamma outer, C
// inner), a given C or gamma fixing its axis.
func grid(opt models.FitOptions, cfg Config, rule float64) []candidate {
	var cands []candidate
	cs := selectC
	if _, ok := opt.Params["C"]; ok {
		cs = []float64{cfg.C}
	}
	gs := []float64{0}
	if cfg.Kernel != KernelLinear {
		switch {
		case cfg.Gamma > 0:
			gs = []float64{cfg.Gamma}
		default:
			gs = nil
			for _, f := range selectGammas {
				gs = append(gs, f*rule)
			}
		}
	}
	for _, g := range gs {
		for _, c := range cs {
			cands = append(cands, candidate{C: c, Gamma: g})
		}
	}
	return cands
}

// innerParams are the parameters of the inner fit of candidate c: the
// outer ones with select=none, the resolved kernel, the candidate's C and
// gamma, and one restart unless restarts was given, as SyMIL's λ CV does:
// the CV only ranks candidates, and the final fit makes the restarts (a
// third of the CPU of the linear kernel's selection; the kernels restart
// once anyway).
func innerParams(opt models.FitOptions, kernel string, c candidate) models.Params {
	p := maps.Clone(opt.Params)
	if p == nil {
		p = models.Params{}
	}
	p["select"], p["kernel"] = "none", kernel
	if _, ok := opt.Params["restarts"]; !ok {
		p["restarts"] = "1"
	}
	p["C"] = strconv.FormatFloat(c.C, 'g', -1, 64)
	if c.Gamma > 0 {
		p["gamma"] = strconv.FormatFloat(c.Gamma, 'g', -1, 64)
	}
	return p
}

// splitFold returns the dataset indices of the inner training and held-out
// bags of inner fold f (sorted positions in labeled).
func splitFold(labeled, f []int) (trainIdx, testIdx []int) {
	trainIdx, testIdx = make([]int, 0, len(labeled)), make([]int, 0, len(f))
	for i, b := range labeled {
		if _, held := slices.BinarySearch(f, i); held {
			testIdx = append(testIdx, b)
		} else {
			trainIdx = append(trainIdx, b)
		}
	}
	return trainIdx, testIdx
}

// heldOutAccuracy is the per-class bag accuracy (1 − Hamming loss) of the
// held-out bags testIdx, given each bag's predicted label set.
func heldOutAccuracy(train *mil.Dataset, testIdx []int, predicted func(t int) ([]int, error)) (float64, error) {
	var right, total float64
	for t, b := range testIdx {
		labels, err := predicted(t)
		if err != nil {
			return 0, err
		}
		bag := &train.Bags[b]
		for c := range train.Classes {
			if slices.Contains(labels, c) == slices.Contains(bag.Labels, c) {
				right++
			}
			total++
		}
	}
	return right / total, nil
}

// cvScoresByFit returns score[c*k+f], the held-out accuracy of candidate c
// on inner fold f, each from a full Fit on the fold's training bags and
// the served model's annotation of its held-out bags. It is the reference
// that cvScoresShared must reproduce, and the path of the linear kernel
// and of sparse data.
func cvScoresByFit(ctx context.Context, train *mil.Dataset, labeled []int, fs [][]int, opt models.FitOptions, instance bool, cfg Config, cands []candidate) ([]float64, error) {
	k := len(fs)
	score := make([]float64, len(cands)*k)
	err := ovr.Parallel(ctx, opt.Workers, len(score), func(ctx context.Context, t int) error {
		c, f := cands[t/k], fs[t%k]
		trainIdx, testIdx := splitFold(labeled, f)
		m, err := Fit(ctx, train.Subset(trainIdx), models.FitOptions{Seed: opt.Seed, Workers: 1, Params: innerParams(opt, cfg.Kernel, c)}, instance)
		if err != nil {
			return fmt.Errorf("misvm select C=%g gamma=%g: %w", c.C, c.Gamma, err)
		}
		score[t], err = heldOutAccuracy(train, testIdx, func(t int) ([]int, error) {
			bag := &train.Bags[testIdx[t]]
			ann, err := m.Annotate(ctx, &mil.Bag{Instances: bag.Instances, Sparse: bag.Sparse}, models.Inductive)
			if err != nil {
				return nil, fmt.Errorf("misvm select: %w", err)
			}
			return ann.BagLabels, nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return score, nil
}

// innerFold is one inner fold of select=cv with a dense kernel, prepared
// once for every candidate: the training bags as the inner Fit prepares
// them, the pair matrix of their rows (pairBase), and that of each
// held-out instance against them.
type innerFold struct {
	opt      models.FitOptions
	instance bool
	warm     bool
	kernel   string
	classes  int
	dim      int
	testIdx  []int
	data     *ovr.Data
	rows     *solver // the rows of every candidate's solver
	// The instances of held-out bag t are the held-out rows teBag[t] to
	// teBag[t+1].
	teBag []int
}

// config is the inner Fit's configuration for candidate c.
func (fd *innerFold) config(c candidate) (Config, error) {
	cfg, err := ParseParams(innerParams(fd.opt, fd.kernel, c))
	if err != nil {
		return Config{}, fmt.Errorf("misvm select: %w", err)
	}
	return cfg.resolve(len(fd.data.Rows)), nil
}

// fit trains candidate c on the fold with ker, the kernel matrix of c's
// gamma: what the inner Fit trains, without its kernel matrix.
func (fd *innerFold) fit(ctx context.Context, c candidate, ker *kernelData) ([]classFit, error) {
	cfg, err := fd.config(c)
	if err != nil {
		return nil, err
	}
	// The matrix depends on gamma only; C reaches the SVM through the
	// learner's configuration.
	kc := *ker
	kc.cfg = cfg
	s := fd.rows.withConfig(cfg, fd.instance)
	s.warm = fd.warm
	fits, err := fitClasses(ctx, fd.data, fd.classes, s, &kc, models.FitOptions{Seed: fd.opt.Seed, Workers: 1})
	if err != nil {
		return nil, fmt.Errorf("misvm select C=%g gamma=%g: %w", c.C, c.Gamma, err)
	}
	return fits, nil
}

// sharedInstanceScores returns, like ovr.Model.InstanceScores, the score
// of every class for each instance whose kernel values against the
// training rows are kte, each summed as ovr.Scorer.Score sums it.
func sharedInstanceScores(fits []classFit, kte [][]float64) [][]float64 {
	out := make([][]float64, len(kte))
	for u, row := range kte {
		out[u] = make([]float64, len(fits))
		for c, f := range fits {
			l, ok := f.l.(*kernelLearner)
			if !ok {
				out[u][c] = f.constant
				continue
			}
			v := l.b
			for a, r := range l.rows {
				v += l.coef[a] * row[r]
			}
			out[u][c] = v
		}
	}
	return out
}

// bagLabels is ovr.Model.Annotate's label set (rule Max) for a bag with
// the given instance scores.
func bagLabels(scores [][]float64) []int {
	labels := []int{}
	col := make([]float64, len(scores))
	for c := range scores[0] {
		for u := range scores {
			col[u] = scores[u][c]
		}
		if _, pos := ovr.Max.BagScore(col); pos {
			labels = append(labels, c)
		}
	}
	return labels
}

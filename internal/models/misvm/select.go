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
func selectParams(ctx context.Context, train *mil.Dataset, labeled []int, opt models.FitOptions, instance bool, cfg Config, rule float64) (candidate, error) {
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
	if len(cands) == 1 || len(labeled) < 2*selectFolds {
		return cands[len(cands)/2], nil
	}
	fs, err := folds.KFold(len(labeled), selectFolds, opt.Seed, selectStream)
	if err != nil {
		return candidate{}, fmt.Errorf("misvm select: %w", err)
	}
	// score[c*k+f]: held-out accuracy of candidate c on inner fold f.
	k := len(fs)
	score := make([]float64, len(cands)*k)
	err = ovr.Parallel(ctx, opt.Workers, len(score), func(ctx context.Context, t int) error {
		c, f := cands[t/k], fs[t%k]
		p := maps.Clone(opt.Params)
		if p == nil {
			p = models.Params{}
		}
		p["select"], p["kernel"] = "none", cfg.Kernel
		// One restart per candidate unless restarts was given, as
		// SyMIL's λ CV does: the CV only ranks C values, and the
		// final fit makes the restarts (a third of the CPU of the
		// linear kernel's selection; the kernels restart once anyway).
		if _, ok := opt.Params["restarts"]; !ok {
			p["restarts"] = "1"
		}
		p["C"] = strconv.FormatFloat(c.C, 'g', -1, 64)
		if c.Gamma > 0 {
			p["gamma"] = strconv.FormatFloat(c.Gamma, 'g', -1, 64)
		}
		trainIdx, testIdx := make([]int, 0, len(labeled)), make([]int, 0, len(f))
		for i, b := range labeled {
			if _, held := slices.BinarySearch(f, i); held {
				testIdx = append(testIdx, b)
			} else {
				trainIdx = append(trainIdx, b)
			}
		}
		m, err := Fit(ctx, train.Subset(trainIdx), models.FitOptions{Seed: opt.Seed, Workers: 1, Params: p}, instance)
		if err != nil {
			return fmt.Errorf("misvm select C=%g gamma=%g: %w", c.C, c.Gamma, err)
		}
		var right, total float64
		for _, b := range testIdx {
			bag := &train.Bags[b]
			ann, err := m.Annotate(ctx, &mil.Bag{Instances: bag.Instances, Sparse: bag.Sparse}, models.Inductive)
			if err != nil {
				return fmt.Errorf("misvm select: %w", err)
			}
			for c := range train.Classes {
				if slices.Contains(ann.BagLabels, c) == slices.Contains(bag.Labels, c) {
					right++
				}
				total++
			}
		}
		score[t] = right / total
		return nil
	})
	if err != nil {
		return candidate{}, err
	}
	best, bestScore := 0, -1.0
	for c := range cands {
		s := 0.0
		for f := range k {
			s += score[c*k+f]
		}
		if s > bestScore+1e-12 {
			best, bestScore = c, s
		}
	}
	return cands[best], nil
}

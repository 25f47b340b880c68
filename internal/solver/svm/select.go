package svm

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/mimlstream/mimlstream/internal/folds"
)

// Grid is the set of (C, gamma) candidates a cross-validated search visits.
type Grid struct {
	C     []float64 `json:"c"`
	Gamma []float64 `json:"gamma"`
}

// PaperGrid is the grid of Liu et al. (and of many MIML papers):
// C and gamma each in {10⁻⁵, …, 10⁵}, 121 pairs.
func PaperGrid() Grid {
	var v []float64
	for e := -5; e <= 5; e++ {
		v = append(v, math.Pow(10, float64(e)))
	}
	return Grid{C: v, Gamma: append([]float64(nil), v...)}
}

// MeanSqDist is the mean squared Euclidean distance over distinct pairs of
// rows, the natural unit of the RBF width: gamma = s / MeanSqDist makes the
// kernel invariant to a rescaling of the features.
func MeanSqDist(X [][]float64) float64 {
	n := len(X)
	if n < 2 {
		return 0
	}
	var s float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			s += sqDist(X[i], X[j])
		}
	}
	return s / float64(n*(n-1)/2)
}

// Choice is a selected parameter pair with its cross-validated error rate
// (meaningful only when Searched: fixed parameters have no CV error).
type Choice struct {
	Params
	CVError  float64 `json:"cv_error"`
	Searched bool    `json:"searched"`
}

// foldStream is the PCG stream of the stratified folds of the grid search
// (per class, seeded by OVRConfig.Seed + class).
const foldStream = 0x5f3759df

// cvError is the k-fold misclassification rate of an SVM with box C on the
// examples of g (whose kernel already fixes gamma).
func cvError(ctx context.Context, g *Gram, y []bool, fold []int, k int, p Params) (float64, error) {
	wrong := 0
	for f := 0; f < k; f++ {
		var train, test []int
		for i, fi := range fold {
			if fi == f {
				test = append(test, i)
			} else {
				train = append(train, i)
			}
		}
		if len(test) == 0 {
			continue
		}
		ytr := make([]bool, len(train))
		for a, i := range train {
			ytr[a] = y[i]
		}
		var sol Solution
		if m, ok := constantModel(ytr); ok {
			sol = Solution{Alpha: make([]float64, len(train)), Bias: m.Bias}
		} else {
			var err error
			if sol, err = Solve(ctx, g.Sub(train), ytr, p); err != nil {
				return 0, err
			}
		}
		for _, t := range test {
			f := sol.Bias
			row := g.row(t)
			for a, i := range train {
				if al := sol.Alpha[a]; al != 0 {
					f += al * sign(ytr[a]) * row[i]
				}
			}
			if (f > 0) != y[t] {
				wrong++
			}
		}
	}
	return float64(wrong) / float64(len(y)), nil
}

// OneVsRest is one binary SVM per class, class c against all others.
type OneVsRest struct {
	Models []*Model `json:"models"`
	Chosen []Choice `json:"chosen"`
}

// Decisions returns the decision value of every class for x. It is safe for
// concurrent use.
func (o *OneVsRest) Decisions(x []float64) []float64 {
	out := make([]float64, len(o.Models))
	for c, m := range o.Models {
		out[c] = m.Decision(x)
	}
	return out
}

// OVRConfig says how the per-class SVMs get their parameters.
type OVRConfig struct {
	// Params is used for every class when Grid is nil; with a grid, only its
	// Tol and MaxIter are used.
	Params Params
	// Grid, when non-nil, is searched per class by stratified Folds-fold
	// (folds.Binary)
	// cross-validation; the lowest error wins, ties going to the pair met
	// first (gamma ascending outer, C ascending inner: the smoother model).
	Grid  *Grid
	Folds int
	Seed  uint64
	// Workers bounds parallelism over classes; <= 0 means one.
	Workers int
}

// TrainOneVsRest trains one SVM per class on rows X, where labels[i] is the
// label set of example i (class indices below classes).
func TrainOneVsRest(ctx context.Context, X [][]float64, labels [][]int, classes int, cfg OVRConfig) (*OneVsRest, error) {
	if len(X) != len(labels) {
		return nil, fmt.Errorf("%w: %d examples but %d label sets", ErrBadInput, len(X), len(labels))
	}
	ys := make([][]bool, classes)
	for c := range ys {
		ys[c] = make([]bool, len(X))
	}
	for i, ls := range labels {
		for _, l := range ls {
			if l < 0 || l >= classes {
				return nil, fmt.Errorf("%w: example %d has label %d of %d classes", ErrBadInput, i, l, classes)
			}
			ys[l][i] = true
		}
	}
	if err := checkData(X, ys[0]); err != nil {
		return nil, err
	}
	chosen := make([]Choice, classes)
	if cfg.Grid == nil {
		for c := range chosen {
			chosen[c] = Choice{Params: cfg.Params}
		}
	} else {
		if len(cfg.Grid.C) == 0 || len(cfg.Grid.Gamma) == 0 {
			return nil, fmt.Errorf("%w: empty grid", ErrBadInput)
		}
		k := cfg.Folds
		if k < 2 {
			k = 5
		}
		for c := range chosen {
			chosen[c].CVError = math.Inf(1)
		}
		foldOf := make([][]int, classes)
		for c := range foldOf {
			foldOf[c] = folds.Binary(ys[c], k, cfg.Seed+uint64(c), foldStream)
		}
		// One Gram matrix per gamma, shared by every class, fold and C.
		for _, gamma := range cfg.Grid.Gamma {
			g := RBFGram(X, gamma)
			err := parallel(ctx, classes, cfg.Workers, func(c int) error {
				for _, C := range cfg.Grid.C {
					p := Params{C: C, Gamma: gamma, Tol: cfg.Params.Tol, MaxIter: cfg.Params.MaxIter}
					if err := p.validate(); err != nil {
						return err
					}
					e, err := cvError(ctx, g, ys[c], foldOf[c], k, p)
					if err != nil {
						return fmt.Errorf("class %d C=%g gamma=%g: %w", c, C, gamma, err)
					}
					if e < chosen[c].CVError {
						chosen[c] = Choice{Params: p, CVError: e, Searched: true}
					}
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	o := &OneVsRest{Models: make([]*Model, classes), Chosen: chosen}
	err := parallel(ctx, classes, cfg.Workers, func(c int) error {
		m, err := Train(ctx, X, ys[c], chosen[c].Params)
		if err != nil {
			return fmt.Errorf("class %d: %w", c, err)
		}
		o.Models[c] = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// parallel runs fn(0..n-1) on at most workers goroutines and returns the
// first error. Each index writes only its own results, so the outcome does
// not depend on scheduling.
func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	workers = max(1, min(workers, n))
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

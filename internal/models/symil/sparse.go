package symil

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
	"github.com/mimlstream/mimlstream/internal/solver/sparsesgd"
)

// Sparse training data (mil.Bag.Sparse: text bags) trains the linear SGD
// (kernel=linear, solver=sgd, the defaults) without densifying: the rows
// stay sparse, scale=auto means unit norm (the z-score, auto's other
// candidate, would fill every zero; maxabs and none are the other choices
// that keep sparsity), and each SGD step costs the non-zeros of the bag's
// instances (package sparsesgd). The other solvers and the RBF kernel work
// on a Gram matrix, so for them the data are densified first. On the same
// data and parameters the model is the dense path's
// (TestSparseMatchesDense).

// sparseCapable reports whether cfg trains on sparse rows as they are.
func sparseCapable(cfg Config) bool { return cfg.Kernel == KernelLinear && cfg.Solver == "sgd" }

// prepareSparse is prepare for sparse data under a sparseCapable cfg.
func prepareSparse(train *mil.Dataset, cfg Config) (*ovr.Data, *trainer, []float64, error) {
	if cfg.Scale == "" {
		cfg.Scale = ovr.ScaleUnit
	}
	data, err := ovr.PrepareSparse(train, cfg.Scale)
	if err != nil {
		return nil, nil, nil, err
	}
	x := data.Sparse
	width := train.Dim
	if cfg.Bias {
		width++
		x = make([]mil.SparseVec, len(data.Sparse))
		for i, r := range data.Sparse {
			x[i] = mil.SparseVec{
				Idx: append(append(make([]int32, 0, len(r.Idx)+1), r.Idx...), int32(train.Dim)),
				Val: append(append(make([]float64, 0, len(r.Val)+1), r.Val...), 1),
			}
		}
	}
	r2 := 0.0
	for _, row := range x {
		r2 += row.SqNorm()
	}
	if len(x) > 0 {
		r2 /= float64(len(x))
	}
	t := &trainer{cfg: cfg, slin: &sparseSolver{x: x, dim: train.Dim, width: width, epochs: cfg.Epochs, tau0: math.Max(1, cfg.C*r2)}}
	return data, t, nil, nil
}

// sparseSolver is linearSolver on sparse rows (bias column included).
type sparseSolver struct {
	x          []mil.SparseVec
	dim, width int // features, and features plus bias
	epochs     int
	tau0       float64
}

func (ls *sparseSolver) scores(p *problem, w []float64, s []float64) []float64 {
	s = s[:0]
	for _, g := range p.gid {
		s = append(s, ls.x[g].Dot(w))
	}
	return s
}

// sgd is linearSolver.sgd with the weights kept by sparsesgd: the same
// sampled bags, pieces, steps and averaged iterate.
func (ls *sparseSolver) sgd(ctx context.Context, p *problem, ht latent, w []float64, tau *float64, rng *rand.Rand) ([]float64, error) {
	return sgdSteps(ctx, p, ht, ls.x, sparsesgd.New(w), ls.epochs, ls.tau0, tau, rng)
}

// fit is linearSolver.fit on sparse rows.
func (ls *sparseSolver) fit(ctx context.Context, p *problem, ht latent, maxIter int, eps float64, rng *rand.Rand) ([]float64, float64, error) {
	return cccp(p, ht, ls.width, maxIter, eps,
		func(ht latent, w []float64, tau *float64) ([]float64, error) { return ls.sgd(ctx, p, ht, w, tau, rng) },
		func(w, s []float64) []float64 { return ls.scores(p, w, s) })
}

// scorer is trainer.scorer for the sparse solver.
func (ls *sparseSolver) scorer(sol solution, bias bool) ovr.Scorer {
	sc := ovr.Scorer{W: append([]float64(nil), sol.w[:ls.dim]...)}
	if bias {
		sc.B = sol.w[ls.dim]
	}
	return sc
}

package misvm

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
	"github.com/mimlstream/mimlstream/internal/solver/sparsesgd"
)

// Sparse training data (text bags: tens of thousands of features, a few
// dozen non-zeros per instance) is trained without densifying:
//
//   - the scaling defaults to max-abs (scale=maxabs), which keeps zeros
//     zero; the centring modes (zscore, zunit, minmax) are refused;
//   - kernel=auto is linear, because the kernel matrix's n² entries are
//     not proportional to the non-zeros (rbf and poly are still available
//     by name, their kernel matrix computed from sparse rows);
//   - select defaults to cv for every kernel: the dense linear default
//     (none, C = 10⁴) is the SyMIL paper's protocol, which has no text
//     sets, and on TREC9 C = 10⁴ is far from the best C for mi-SVM (10-fold
//     bag accuracy 64–79% against 74–95% with C chosen by inner CV on the
//     training bags; docs/reproductions/trec-text.md);
//   - the linear SGD keeps its weights with package sparsesgd (w = a·v,
//     the average of the iterates as B·v + T), so a step costs the
//     non-zeros of one instance, not the dimension.
//
// The dense path stays the reference: on the same data with the same
// parameters, both give the same model (TestSparseMatchesDense).

// SparseDefaultScale is the scaling of sparse data when param scale is not
// given.
const SparseDefaultScale = ovr.ScaleUnit

// sparseConfig applies the sparse defaults to cfg for params p.
func sparseConfig(cfg Config, p models.Params) Config {
	if _, ok := p["scale"]; !ok {
		cfg.Scale = SparseDefaultScale
	}
	if cfg.Kernel == KernelAuto {
		cfg.Kernel = KernelLinear
	}
	if cfg.Select == "" {
		cfg.Select = "cv"
	}
	return cfg
}

// withBias returns the rows with a constant 1 feature at index dim when
// bias is set (the rows themselves otherwise; nil stays nil, which is how
// the solver tells dense data).
func withBias(rows []mil.SparseVec, dim int, bias bool) []mil.SparseVec {
	if !bias || rows == nil {
		return rows
	}
	out := make([]mil.SparseVec, len(rows))
	for i, r := range rows {
		out[i] = mil.SparseVec{
			Idx: append(append(make([]int32, 0, len(r.Idx)+1), r.Idx...), int32(dim)),
			Val: append(append(make([]float64, 0, len(r.Val)+1), r.Val...), 1),
		}
	}
	return out
}

// GammaScaleSparse is GammaScale over sparse rows of dimension dim: the
// variance of all dim·len(rows) entries, zeros included.
func GammaScaleSparse(rows []mil.SparseVec, dim int) float64 {
	if len(rows) == 0 || dim == 0 {
		return 1
	}
	var sum, sq float64
	for _, r := range rows {
		for _, v := range r.Val {
			sum += v
			sq += v * v
		}
	}
	n := float64(len(rows)) * float64(dim)
	mean := sum / n
	v := sq/n - mean*mean
	if !(v > 0) {
		return 1
	}
	return 1 / (float64(dim) * v)
}

// newKernelDataSparse is newKernelData on sparse rows; the kernel values
// are bit-identical to the dense ones (ovr.SqDistSparse, merged dots).
func newKernelDataSparse(cfg Config, rows []mil.SparseVec, dim int) (*kernelData, error) {
	if err := checkGramLimit(cfg, len(rows)); err != nil {
		return nil, err
	}
	gamma := cfg.Gamma
	if gamma == 0 {
		gamma = GammaScaleSparse(rows, dim)
	}
	k := &kernelData{cfg: cfg, srows: rows, gamma: gamma}
	k.scorer = ovr.Scorer{Gamma: gamma}
	if cfg.Kernel == KernelPoly {
		k.scorer.Kernel, k.scorer.Degree, k.scorer.Coef0 = ovr.KernelPoly, cfg.Degree, cfg.Coef0
	}
	n := len(rows)
	m := make([]float64, n*n)
	for i := range n {
		for j := i; j < n; j++ {
			var v float64
			if cfg.Kernel == KernelPoly {
				v = math.Pow(gamma*rows[i].DotSparse(rows[j])+cfg.Coef0, float64(cfg.Degree))
			} else {
				v = math.Exp(-gamma * ovr.SqDistSparse(rows[i], rows[j]))
			}
			m[i*n+j], m[j*n+i] = v, v
		}
	}
	return k, k.setGram(n, m)
}

// sparseLinearLearner is linearLearner on sparse rows (solver.xs).
type sparseLinearLearner struct {
	s   *solver
	w   []float64
	tau float64
	rng *rand.Rand
}

func (l *sparseLinearLearner) train(ctx context.Context, ex []example) (func(int) float64, float64, error) {
	if l.w == nil {
		l.w = make([]float64, l.s.width)
	}
	w, obj, err := l.s.svmSparse(ctx, ex, l.w, &l.tau, l.rng)
	if err != nil {
		return nil, 0, err
	}
	l.w = w
	return func(row int) float64 { return l.s.xs[row].Dot(w) }, obj, nil
}

// svmSparse is svm on the sparse rows s.xs: the same steps, the same random
// draws, the same averaged iterate and objective, in O(non-zeros) per step
// (the weights and their running average are kept by package sparsesgd).
func (s *solver) svmSparse(ctx context.Context, ex []example, w0 []float64, tau *float64, rng *rand.Rand) ([]float64, float64, error) {
	n := len(ex)
	weight := balancedWeight(ex)
	st := sparsesgd.New(w0)
	steps := s.cfg.Epochs * n
	half := steps / 2
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
		x := s.xs[e.row]
		margin := y * st.Dot(x)
		st.Decay(1 - eta)
		if margin < 1 {
			st.Add(eta*s.cfg.C*weight(e.pos)*y, x)
		}
		if step >= half {
			st.Count()
		} else {
			st.Step()
		}
	}
	avg := st.Average()
	obj := 0.5 * dot(avg, avg)
	for _, e := range ex {
		y := -1.0
		if e.pos {
			y = 1
		}
		obj += s.cfg.C / float64(n) * weight(e.pos) * math.Max(0, 1-y*s.xs[e.row].Dot(avg))
	}
	return avg, obj, nil
}

// nearestMeanSparse is nearestMean on sparse rows, with the dense order of
// operations (so the same instance wins).
func (s *solver) nearestMeanSparse(b []int) int {
	mean := make([]float64, s.width)
	for _, g := range b {
		x := s.xs[g]
		for k, j := range x.Idx {
			mean[j] += x.Val[k] / float64(len(b))
		}
	}
	best, bestD := 0, math.Inf(1)
	for j, g := range b {
		if d := ovr.SqDistDenseSparse(mean, s.xs[g]); d < bestD {
			best, bestD = j, d
		}
	}
	return best
}

package misvm

// The inner CV of a dense kernel as it was before cvScoresOuter (each inner
// fold scaled by its own training instances), kept as a reference:
// TestSharedCVMatchesFit holds it to a Fit per candidate, and
// TestWarmSelectionAudit counts the choices cvScoresOuter makes otherwise.
// Nothing outside the tests runs it.

import (
	"context"
	"fmt"
	"slices"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// cvScoresShared was the inner CV of a dense kernel before cvScoresOuter
// (kept for TestWarmSelectionAudit, which counts the choices that differ):
// each inner fold scaled by its own training instances.
//
// cvScoresShared is cvScoresByFit for a dense rbf or poly kernel without
// the repeated work: per inner fold the training bags are prepared (the
// same scaler as the inner Fit's) and the gamma-free pair matrices of their
// instances and of held-out against training instances are computed once
// (innerFold), and each gamma's kernel matrices once from them, shared by
// every C; a held-out instance's score is a sum over the support vectors'
// kernel values in the order ovr.Scorer sums them. Without warm every
// float is the one the reference computes, so the scores are equal, not
// close (TestSharedCVMatchesFit). On Musk1 the reference spent about two
// thirds of its time computing the 27 kernel matrices and scoring the
// held-out bags against the 27 served models.
//
// With warm (what select=cv uses) every round's SMO shrinks
// (svm.Params.Shrinking) and each relabeling round after
// the first starts from the previous round's solution (kernelLearner
// warmStart): a round then takes tens of SMO iterations instead of
// hundreds (mi-SVM on a Musk1 fold: 43 against about 480), and its SVM is
// the same optimum to the SMO tolerance, not the same floats, so a
// held-out accuracy can move. The final fit never warm-starts, so a fit's
// model changes only if its chosen C and gamma do; on every fit of the
// Musk1, Elephant and Fox evaluations of docs/reproductions they do not
// (TestWarmSelectionAudit).
func cvScoresShared(ctx context.Context, train *mil.Dataset, labeled []int, fs [][]int, opt models.FitOptions, instance bool, kernel string, cands []candidate, warm bool) ([]float64, error) {
	k := len(fs)
	score := make([]float64, len(cands)*k)
	var gammas []float64
	for _, c := range cands {
		if !slices.Contains(gammas, c.Gamma) {
			gammas = append(gammas, c.Gamma)
		}
	}
	// The matrices of a fold are reused by the next (the folds run one
	// after another; the gammas of a fold may run in parallel, so each
	// has its own): allocating them per fold and gamma was most of the
	// inner CV's garbage.
	var buf foldBuffers
	kbuf := make([]kernelBuffers, len(gammas))
	for fi, f := range fs {
		fd, err := newInnerFold(train, labeled, f, opt, instance, kernel, &buf)
		if err != nil {
			return nil, err
		}
		fd.warm = warm
		err = ovr.Parallel(ctx, opt.Workers, len(gammas), func(ctx context.Context, gi int) error {
			var ker *kernelData
			var kte [][]float64
			for ci, c := range cands {
				if c.Gamma != gammas[gi] {
					continue
				}
				if ker == nil {
					var err error
					if ker, kte, err = fd.kernelFor(c, &kbuf[gi]); err != nil {
						return err
					}
				}
				fits, err := fd.fit(ctx, c, ker)
				if err != nil {
					return err
				}
				score[ci*k+fi], err = heldOutAccuracy(train, fd.testIdx, func(t int) ([]int, error) {
					return bagLabels(sharedInstanceScores(fits, kte[fd.teBag[t]:fd.teBag[t+1]])), nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return score, nil
}

// foldBuffers hold the pair matrices of an inner fold for the next one to
// reuse, kernelBuffers the kernel values of one gamma.
type foldBuffers struct {
	pb, te []float64
}

type kernelBuffers struct {
	ker, kte []float64
}

// sharedFold is an inner fold of cvScoresShared: its rows are scaled by its
// own scaler, and it holds the pair matrix of its rows (pairBase) and that
// of each held-out instance against them: te[u][r] is the base of held-out
// instance u and training row r, the float ovr.Scorer computes for them
// (see base).
type sharedFold struct {
	innerFold
	pb []float64
	te [][]float64
}

func newInnerFold(train *mil.Dataset, labeled, f []int, opt models.FitOptions, instance bool, kernel string, buf *foldBuffers) (*sharedFold, error) {
	trainIdx, testIdx := splitFold(labeled, f)
	fd := &sharedFold{innerFold: innerFold{opt: opt, instance: instance, kernel: kernel, classes: len(train.Classes), dim: train.Dim, testIdx: testIdx}}
	// The configuration every candidate shares (C and gamma aside).
	cfg, err := ParseParams(innerParams(opt, kernel, candidate{C: 1, Gamma: 1}))
	if err != nil {
		return nil, fmt.Errorf("misvm select: %w", err)
	}
	if fd.data, err = ovr.Prepare(train.Subset(trainIdx), cfg.Scale); err != nil {
		return nil, fmt.Errorf("misvm select: %w", err)
	}
	n := len(fd.data.Rows)
	if err := checkGramLimit(cfg, n); err != nil {
		return nil, fmt.Errorf("misvm select: %w", err)
	}
	fd.pb = pairBaseInto(cfg, fd.data.Rows, buf.pb)
	buf.pb = fd.pb
	fd.rows = solverRows(cfg, fd.data, train.Dim)
	fd.rows.nearest = make([]int, len(fd.data.Bags))
	for i, b := range fd.data.Bags {
		fd.rows.nearest[i] = fd.rows.nearestMean(b)
	}
	nte := 0
	for _, b := range testIdx {
		nte += len(train.Bags[b].Instances)
	}
	buf.te = grow(buf.te, nte*n)
	z := make([]float64, train.Dim)
	for _, b := range testIdx {
		fd.teBag = append(fd.teBag, len(fd.te))
		for _, x := range train.Bags[b].Instances {
			z = fd.data.Scaler.Apply(z, x)
			u := len(fd.te)
			row := buf.te[u*n : (u+1)*n]
			baseRow(cfg, z, fd.data.Rows, row)
			fd.te = append(fd.te, row)
		}
	}
	fd.teBag = append(fd.teBag, len(fd.te))
	return fd, nil
}

// kernelFor returns the kernel matrix of c's gamma over the fold's training
// rows and the kernel values of the held-out instances against them.
// The matrices are written into buf (nil: allocated), which keeps them
// for the next fold: they are in use until c's gamma is done on this fold.
func (fd *sharedFold) kernelFor(c candidate, buf *kernelBuffers) (*kernelData, [][]float64, error) {
	cfg, err := fd.config(c)
	if err != nil {
		return nil, nil, err
	}
	if buf == nil {
		buf = &kernelBuffers{}
	}
	n := len(fd.data.Rows)
	buf.ker = grow(buf.ker, n*n)
	ker, err := newKernelDataFrom(cfg, fd.data.Rows, fd.pb, buf.ker)
	if err != nil {
		return nil, nil, fmt.Errorf("misvm select: %w", err)
	}
	buf.kte = grow(buf.kte, len(fd.te)*n)
	kte := make([][]float64, len(fd.te))
	for u, row := range fd.te {
		kte[u] = buf.kte[u*n : (u+1)*n]
		for r, v := range row {
			kte[u][r] = ker.kernel(v)
		}
	}
	return ker, kte, nil
}

// baseRow writes the base of a against each of rows into dst.
func baseRow(cfg Config, a []float64, rows [][]float64, dst []float64) {
	for j, b := range rows {
		dst[j] = base(cfg, a, b)
	}
}

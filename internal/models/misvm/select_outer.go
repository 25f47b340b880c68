package misvm

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// cvScoresOuter is the inner cross-validation of select=cv for a dense rbf
// or poly kernel: score[c*k+f], the held-out accuracy of candidate c on
// inner fold f, with the instances scaled once, by the scaler of the fit
// that selects (data, fitted on all its training instances, the inner
// held-out ones included; no label is used). Every inner training set and
// held-out bag is then a set of rows of data, so one pair matrix of data's
// rows (pairBase) serves every fold, one kernel matrix per gamma serves
// its three folds and three C values (an inner fold's kernel matrix is its
// sub-matrix, a held-out instance's kernel values a row of it), and the
// final fit reuses the pair matrix: it returns it, unchanged.
//
// cvScoresShared, which it replaces, scaled each inner fold by its own
// training instances, so that a candidate scored there was the model a Fit
// on the fold would train; that needed a pair matrix per fold and one of
// held-out against training instances, and a kernel matrix per fold and
// gamma, each of which cost about as much as the final fit's own (Musk1:
// a third of the default's CPU). The scores are those of a Fit per
// candidate on the fold's bags already scaled by data's scaler
// (scale=none), annotated by the served model: equal, not close, without
// warm (TestOuterCVMatchesFit). o.warm starts the relabeling rounds as in
// cvScoresShared.
func cvScoresOuter(ctx context.Context, train *mil.Dataset, data *ovr.Data, fs [][]int, opt models.FitOptions, instance bool, kernel string, cands []candidate, o outerCV) ([]float64, []float64, error) {
	k := len(fs)
	score := make([]float64, len(cands)*k)
	var gammas []float64
	for _, c := range cands {
		if !slices.Contains(gammas, c.Gamma) {
			gammas = append(gammas, c.Gamma)
		}
	}
	// The configuration every candidate shares (C and gamma aside).
	cfg, err := ParseParams(innerParams(opt, kernel, candidate{C: 1, Gamma: 1}))
	if err != nil {
		return nil, nil, fmt.Errorf("misvm select: %w", err)
	}
	n := len(data.Rows)
	if err := checkGramLimit(cfg, n); err != nil {
		return nil, nil, fmt.Errorf("misvm select: %w", err)
	}
	pb := pairBase(cfg, data.Rows)
	fds := make([]*outerFold, k)
	for fi, f := range fs {
		fds[fi] = newOuterFold(data, f, opt, instance, kernel, len(train.Classes), train.Dim, cfg)
		fds[fi].warm = o.warm
	}
	// The matrices of a gamma are reused by the next one (the gammas run
	// one after another unless opt.Workers > 1): the garbage they were
	// cost the default a tenth of its time in collections.
	var mu sync.Mutex
	var free []*gammaBuffers
	err = ovr.Parallel(ctx, opt.Workers, len(gammas), func(ctx context.Context, gi int) error {
		mu.Lock()
		buf := &gammaBuffers{}
		if len(free) > 0 {
			buf, free = free[len(free)-1], free[:len(free)-1]
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			free = append(free, buf)
			mu.Unlock()
		}()
		var full *kernelData
		sub, kte := &buf.sub, &buf.kte
		for fi, fd := range fds {
			var ker *kernelData
			var teK [][]float64
			// free: the fold's last candidate of this gamma (C freeC,
			// scored in score[freeCi*k+fi]) trained every SVM without
			// an alpha reaching its box; see boundFree.
			free, freeC, freeCi := false, 0.0, 0
			for ci, c := range cands {
				if c.Gamma != gammas[gi] {
					continue
				}
				if free && c.C >= freeC && !o.noReuse {
					score[ci*k+fi] = score[freeCi*k+fi]
					if o.reused != nil {
						o.reused.Add(1)
					}
					continue
				}
				if ker == nil {
					ccfg, err := fd.config(c)
					if err != nil {
						return err
					}
					if full == nil {
						buf.full = grow(buf.full, n*n)
						if full, err = newKernelDataFrom(ccfg, data.Rows, pb, buf.full); err != nil {
							return fmt.Errorf("misvm select: %w", err)
						}
					}
					ker, teK = fd.kernel(full, ccfg, sub, kte)
				}
				fits, err := fd.fit(ctx, c, ker)
				if err != nil {
					return err
				}
				score[ci*k+fi], err = heldOutAccuracy(train, fd.testIdx, func(t int) ([]int, error) {
					return bagLabels(sharedInstanceScores(fits, teK[fd.teBag[t]:fd.teBag[t+1]])), nil
				})
				if err != nil {
					return err
				}
				free, freeC, freeCi = boundFree(fits) && fd.restarts(c) == 1, c.C, ci
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return score, pb, nil
}

// boundFree reports whether no alpha of any SVM of fits (every class,
// every relabeling round) reached its box at any point of SMO
// (svm.Solution.BoundFree). A larger C then trains the same SVMs, float
// for float: C enters a kernel fit only through the boxes C/(2N±) of the
// rounds' SMOs (and the primal objective, which ranks restarts, so one
// restart is required), every SMO takes the same steps under boxes no
// smaller when none was ever reached, so each round ends with the same
// alphas, relabels the same way, and warm-starts the next round from the
// same point (clipped to a box it lies below). Its held-out accuracies are
// those of the smaller C, which cvScoresOuter reuses instead of training
// it: the scores are equal, not close (TestBoundFreeReuseMatchesFit). On
// Musk1 this skips the larger C's of the narrow gammas, where the inner
// fits separate their training instances without an alpha at its box.
func boundFree(fits []classFit) bool {
	for _, f := range fits {
		if l, ok := f.l.(*kernelLearner); ok && !l.boundFree {
			return false
		}
	}
	return true
}

// outerCV is how cvScoresOuter runs: warm (warm-started relabeling rounds
// and shrinking, the default's inner CV) or from 0 (the reference the
// audits compare with); noReuse trains every candidate, even a larger C
// that a bound-free smaller C answers, and reused, if not nil, counts the
// candidate folds the reuse spared (both for
// TestBoundFreeReuseMatchesFit).
type outerCV struct {
	warm    bool
	noReuse bool
	reused  *atomic.Int64
}

// restarts is the inner fit's number of restarts for candidate c.
func (fd *outerFold) restarts(c candidate) int {
	cfg, err := fd.config(c)
	if err != nil {
		return 0
	}
	return cfg.Restarts
}

// gammaBuffers hold the kernel matrix of one gamma, a fold's sub-matrix of
// it and the fold's held-out kernel values, for the next gamma to reuse.
type gammaBuffers struct {
	full, sub, kte []float64
}

// outerFold is one inner fold of cvScoresOuter: an innerFold whose rows
// are rows of the selecting fit's data.
type outerFold struct {
	innerFold
	// rowIdx[r] is the row of data that is inner training row r; teRow[u]
	// that of held-out instance u.
	rowIdx, teRow []int
}

func newOuterFold(data *ovr.Data, f []int, opt models.FitOptions, instance bool, kernel string, classes, dim int, cfg Config) *outerFold {
	fd := &outerFold{innerFold: innerFold{opt: opt, instance: instance, kernel: kernel, classes: classes, dim: dim}}
	in := &ovr.Data{Scaler: data.Scaler}
	for i, b := range data.Bags {
		if _, held := slices.BinarySearch(f, i); held {
			fd.testIdx = append(fd.testIdx, data.BagIndex[i])
			fd.teBag = append(fd.teBag, len(fd.teRow))
			fd.teRow = append(fd.teRow, b...)
			continue
		}
		ids := make([]int, len(b))
		for j, r := range b {
			ids[j] = len(in.Rows)
			in.Rows = append(in.Rows, data.Rows[r])
			fd.rowIdx = append(fd.rowIdx, r)
		}
		in.Bags = append(in.Bags, ids)
		in.Labels = append(in.Labels, data.Labels[i])
		in.BagIndex = append(in.BagIndex, data.BagIndex[i])
	}
	fd.teBag = append(fd.teBag, len(fd.teRow))
	fd.data = in
	fd.rows = solverRows(cfg, in, dim)
	fd.rows.nearest = make([]int, len(in.Bags))
	for i, b := range in.Bags {
		fd.rows.nearest[i] = fd.rows.nearestMean(b)
	}
	return fd
}

// kernel returns the fold's kernel data (its training rows' sub-matrix of
// full, in *sub) and the held-out instances' kernel values against its
// training rows (in *kte), with configuration cfg; the buffers are reused
// from fold to fold.
func (fd *outerFold) kernel(full *kernelData, cfg Config, sub, kte *[]float64) (*kernelData, [][]float64) {
	g := full.gram.SubInto(fd.rowIdx, *sub)
	if g != full.gram {
		*sub = g.Data()
	}
	ker := &kernelData{cfg: cfg, rows: fd.data.Rows, gram: g, gamma: full.gamma, scorer: full.scorer, subBuf: new([]float64)}
	n, m := full.gram.Len(), len(fd.rowIdx)
	*kte = grow(*kte, len(fd.teRow)*m)
	rows := make([][]float64, len(fd.teRow))
	for u, tr := range fd.teRow {
		rows[u] = (*kte)[u*m : (u+1)*m]
		kr := full.gram.Data()[tr*n : (tr+1)*n]
		for r, j := range fd.rowIdx {
			rows[u][r] = kr[j]
		}
	}
	return ker, rows
}

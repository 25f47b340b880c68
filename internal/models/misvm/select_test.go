package misvm

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/folds"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// multiToy is multi-label MIL data with three classes: a bag carries class
// 0 and / or 1 when it holds an instance shifted along feature 0 or 1
// (with label noise, so that the inner CV's candidates score differently),
// and every bag carries class 2, which the one-vs-rest fit answers with a
// constant.
func multiToy(seed uint64, bags, d int) *mil.Dataset {
	r := rand.New(rand.NewPCG(seed, 9))
	ds := &mil.Dataset{Name: "multi", Classes: []string{"a", "b", "all"}, Dim: d}
	for range bags {
		b := mil.Bag{Labels: []int{}}
		m := 2 + r.IntN(4)
		for range m {
			x := make([]float64, d)
			for k := range x {
				x[k] = r.NormFloat64()
			}
			b.Instances = append(b.Instances, x)
		}
		for c := range 2 {
			if r.IntN(2) == 0 {
				continue
			}
			b.Instances[r.IntN(m)][c] += 2.5
			b.Labels = append(b.Labels, c)
		}
		if r.IntN(8) == 0 && len(b.Labels) > 0 {
			b.Labels = b.Labels[1:] // label noise
		}
		b.Labels = append(b.Labels, 2)
		ds.Bags = append(ds.Bags, b)
	}
	return ds
}

// TestSharedCVMatchesFit: the inner cross-validation of a dense kernel
// (cvScoresShared: one pair matrix per fold, one kernel matrix per gamma,
// held-out scores from kernel lookups) gives the held-out accuracies of the
// reference (cvScoresByFit: a full Fit per candidate and fold, held-out
// bags annotated by the served model) exactly, hence the same selected C
// and gamma, and each held-out instance's decision value within 1e-12 of
// the served model's. It catches a shared kernel matrix that differs from
// the inner Fit's (scaler, width, degree), a C that does not reach the SVM
// through the shared matrix, and held-out scores summed differently from
// ovr.Scorer (bias, support vectors, constant classes).
func TestSharedCVMatchesFit(t *testing.T) {
	tests := kernelSelectCases()
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opt, cfg, data, cands, fs := selectSetup(t, tc.ds, tc.params)
			want, err := cvScoresByFit(ctx, tc.ds, data.BagIndex, fs, opt, tc.instance, cfg, cands)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cvScoresShared(ctx, tc.ds, data.BagIndex, fs, opt, tc.instance, cfg.Kernel, cands, false)
			if err != nil {
				t.Fatal(err)
			}
			sameScores(t, cands, len(fs), got, want)
			for fi, f := range fs {
				fd, err := newInnerFold(tc.ds, data.BagIndex, f, opt, tc.instance, cfg.Kernel, &foldBuffers{})
				if err != nil {
					t.Fatal(err)
				}
				trainIdx, testIdx := splitFold(data.BagIndex, f)
				for _, c := range cands {
					ker, kte, err := fd.kernelFor(c, nil)
					if err != nil {
						t.Fatal(err)
					}
					fits, err := fd.fit(ctx, c, ker)
					if err != nil {
						t.Fatal(err)
					}
					m, err := Fit(ctx, tc.ds.Subset(trainIdx), models.FitOptions{Seed: opt.Seed, Workers: 1, Params: innerParams(opt, cfg.Kernel, c)}, tc.instance)
					if err != nil {
						t.Fatal(err)
					}
					for tb, b := range testIdx {
						gotS := sharedInstanceScores(fits, kte[fd.teBag[tb]:fd.teBag[tb+1]])
						wantS := m.InstanceScores(&tc.ds.Bags[b])
						for u := range wantS {
							for cl := range wantS[u] {
								if a, w := gotS[u][cl], wantS[u][cl]; math.Abs(a-w) > 1e-12*max(1, math.Abs(w)) {
									t.Fatalf("candidate %v fold %d bag %d instance %d class %d: score %v, served model %v", c, fi, b, u, cl, a, w)
								}
							}
						}
					}
				}
			}
		})
	}
}

// TestWarmStartFeasible: the starting point of a warm-started round is in
// the new boxes and on Σ y·alpha = 0 (SolveBoundedFrom refuses anything
// else) whatever changed since the previous round, and is the previous
// solution itself when nothing did (MI-SVM's boxes do not move). It
// catches a flipped label that keeps its alpha, a box not re-clipped, and
// a surplus taken off the wrong side.
func TestWarmStartFeasible(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 1))
	tests := []struct {
		name       string
		n          int
		flip       float64 // fraction of labels flipped since the last round
		boxScale   float64 // new boxes / old boxes
		wantSame   bool
		wantStart  bool
		prevLength int // 0: n
	}{
		{"nothing changed", 40, 0, 1, true, true, 0},
		{"labels flipped", 40, 0.2, 1, false, true, 0},
		{"boxes shrank", 40, 0, 0.3, false, true, 0},
		{"labels flipped and boxes shrank", 60, 0.3, 0.5, false, true, 0},
		{"first round", 40, 0, 1, false, false, -1},
		{"other examples", 40, 0, 1, false, false, 30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prevPos := make([]bool, tc.n)
			bound := make([]float64, tc.n)
			for a := range prevPos {
				prevPos[a] = a%3 == 0
			}
			// A feasible previous solution: random alphas in the old
			// boxes, the positive side scaled to balance the negative.
			prev := make([]float64, tc.n)
			var sp, sn float64
			for a := range prev {
				prev[a] = r.Float64()
				if prevPos[a] {
					sp += prev[a]
				} else {
					sn += prev[a]
				}
			}
			for a := range prev {
				if prevPos[a] {
					prev[a] *= sn / sp
				}
			}
			y := make([]bool, tc.n)
			for a := range y {
				y[a] = prevPos[a] != (r.Float64() < tc.flip)
				bound[a] = tc.boxScale * 5
			}
			l := &kernelLearner{prevAlpha: prev, prevPos: prevPos}
			switch {
			case tc.prevLength < 0:
				l.prevAlpha, l.prevPos = nil, nil
			case tc.prevLength > 0:
				l.prevAlpha, l.prevPos = prev[:tc.prevLength], prevPos[:tc.prevLength]
			}
			got := l.warmStart(y, bound)
			if (got != nil) != tc.wantStart {
				t.Fatalf("start %v, want one: %v", got != nil, tc.wantStart)
			}
			if got == nil {
				return
			}
			var sum, abs float64
			for a, v := range got {
				if !(v >= 0 && v <= bound[a]) {
					t.Errorf("alpha[%d] = %v outside [0, %v]", a, v, bound[a])
				}
				if y[a] != prevPos[a] && v != 0 {
					t.Errorf("alpha[%d] = %v kept across a label flip", a, v)
				}
				if tc.wantSame && v != prev[a] {
					t.Errorf("alpha[%d] = %v, previous %v", a, v, prev[a])
				}
				sum += sign(y[a]) * v
				abs += v
			}
			if math.Abs(sum) > 1e-12*max(1, abs) {
				t.Errorf("Σ y·alpha = %v", sum)
			}
			if abs == 0 {
				t.Errorf("all alphas 0: the start carries nothing over")
			}
		})
	}
}

// selectCase is an inner-CV test case: a data set, MI-SVM or mi-SVM, and
// the parameters given.
type selectCase struct {
	name     string
	ds       *mil.Dataset
	instance bool
	params   models.Params
}

// kernelSelectCases are the dense-kernel cases the inner CVs are held to a
// Fit per candidate on: rbf and poly, both learners, other scalers, random
// restarts, three classes, C or gamma given, fewer rounds.
func kernelSelectCases() []selectCase {
	return []selectCase{
		{"MI-SVM rbf ring", ringToy(4, 36), false, models.Params{}},
		{"mi-SVM rbf ring", ringToy(4, 36), true, models.Params{}},
		{"MI-SVM poly", binaryToy(5, 30, 3), false, models.Params{"kernel": "poly", "degree": "2"}},
		{"mi-SVM poly", binaryToy(5, 30, 3), true, models.Params{"kernel": "poly", "degree": "2"}},
		{"mi-SVM rbf minmax", binaryToy(5, 30, 3), true, models.Params{"kernel": "rbf", "scale": "minmax"}},
		{"mi-SVM rbf zunit, two random restarts", binaryToy(6, 30, 3), true, models.Params{"kernel": "rbf", "scale": "zunit", "restarts": "2", "init": "random"}},
		{"MI-SVM rbf three classes", multiToy(7, 45, 4), false, models.Params{"kernel": "rbf"}},
		{"mi-SVM rbf three classes, C given", multiToy(8, 45, 4), true, models.Params{"C": "300"}},
		{"MI-SVM rbf gamma given, iters 3", multiToy(9, 45, 4), false, models.Params{"gamma": "0.2", "iters": "3"}},
	}
}

// selectSetup prepares what selectParams prepares for the inner CV of ds
// with params (seed 3, two workers): the options, the resolved
// configuration, the prepared data, the grid and the inner folds.
func selectSetup(t *testing.T, ds *mil.Dataset, params models.Params) (models.FitOptions, Config, *ovr.Data, []candidate, [][]int) {
	t.Helper()
	opt := models.FitOptions{Seed: 3, Workers: 2, Params: params}
	cfg, err := ParseParams(params)
	if err != nil {
		t.Fatal(err)
	}
	data, err := ovr.Prepare(ds, cfg.Scale)
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.resolve(len(data.Rows))
	fs, err := folds.KFold(len(data.BagIndex), selectFolds, opt.Seed, selectStream)
	if err != nil {
		t.Fatal(err)
	}
	return opt, cfg, data, grid(opt, cfg, GammaScale(data.Rows)), fs
}

// sameScores fails t for every candidate fold whose held-out accuracy in got
// is not want's, float for float (score[c*k+f], k folds), and returns how
// many distinct accuracies want holds.
func sameScores(t *testing.T, cands []candidate, k int, got, want []float64) int {
	t.Helper()
	distinct := map[float64]bool{}
	for i := range want {
		distinct[want[i]] = true
		if got[i] != want[i] {
			t.Errorf("candidate %v fold %d: held-out accuracy %v, reference %v", cands[i/k], i%k, got[i], want[i])
		}
	}
	t.Logf("%d candidates, %d distinct fold accuracies", len(cands), len(distinct))
	return len(distinct)
}

package misvm

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// TestOuterCVMatchesFit: the inner cross-validation of a dense kernel
// (cvScoresOuter: the selecting fit's scaled rows, one pair matrix for
// every fold, one kernel matrix per gamma, each fold's a sub-matrix of it,
// held-out scores from its rows) gives, without warm starts, exactly the
// held-out accuracies of a full Fit per candidate and fold on the bags
// already scaled by the selecting fit's scaler (scale=none), its held-out
// bags annotated by the served model (cvScoresByFit on those bags), hence
// the same selected C and gamma. It catches a sub-matrix or held-out row
// taken at the wrong rows, a kernel matrix of another gamma, a C that does
// not reach the SVM, and bags or labels of a fold mixed up.
func TestOuterCVMatchesFit(t *testing.T) {
	tests := kernelSelectCases()
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opt, cfg, data, cands, fs := selectSetup(t, tc.ds, tc.params)
			got, pb, err := cvScoresOuter(ctx, tc.ds, data, fs, opt, tc.instance, cfg.Kernel, cands, outerCV{})
			if err != nil {
				t.Fatal(err)
			}
			// The reference: the bags scaled by data's scaler, fitted
			// and annotated without scaling.
			scaled := *tc.ds
			scaled.Bags = make([]mil.Bag, len(tc.ds.Bags))
			for i, b := range tc.ds.Bags {
				scaled.Bags[i] = b
				scaled.Bags[i].Instances = make([][]float64, len(b.Instances))
				for j, x := range b.Instances {
					scaled.Bags[i].Instances[j] = data.Scaler.Apply(make([]float64, len(x)), x)
				}
			}
			ropt := opt
			ropt.Params = maps.Clone(tc.params)
			ropt.Params["scale"] = "none"
			want, err := cvScoresByFit(ctx, &scaled, data.BagIndex, fs, ropt, tc.instance, cfg, cands)
			if err != nil {
				t.Fatal(err)
			}
			if distinct := sameScores(t, cands, len(fs), got, want); len(cands) > 1 && distinct < 2 {
				t.Errorf("every fold accuracy is %v: the case does not tell candidates apart", want[0])
			}
			// The pair matrix handed to the final fit is that of data's
			// rows.
			ref := pairBase(cfg, data.Rows)
			for i := range ref {
				if pb[i] != ref[i] {
					t.Fatalf("pair matrix entry %d: %v, pairBase %v", i, pb[i], ref[i])
				}
			}
		})
	}
}

// TestSelectedFitMatchesGivenParams: the default fit (select=cv, whose
// final kernel matrix comes from the selection's pair matrix) is the fit
// with the selected C and gamma given and select=none, byte for byte in
// its served state.
func TestSelectedFitMatchesGivenParams(t *testing.T) {
	ctx := context.Background()
	for _, instance := range []bool{false, true} {
		ds := multiToy(11, 45, 4)
		opt := models.FitOptions{Seed: 5, Workers: 1, Params: models.Params{}}
		cfg, err := ParseParams(opt.Params)
		if err != nil {
			t.Fatal(err)
		}
		data, err := ovr.Prepare(ds, cfg.Scale)
		if err != nil {
			t.Fatal(err)
		}
		cfg = cfg.resolve(len(data.Rows))
		c, pb, err := selectParams(ctx, ds, data, opt, instance, cfg, GammaScale(data.Rows))
		if err != nil {
			t.Fatal(err)
		}
		if pb == nil {
			t.Fatal("no pair matrix from the selection")
		}
		m, err := Fit(ctx, ds, opt, instance)
		if err != nil {
			t.Fatal(err)
		}
		given := models.Params{"select": "none", "C": strconv.FormatFloat(c.C, 'g', -1, 64), "gamma": strconv.FormatFloat(c.Gamma, 'g', -1, 64)}
		w, err := Fit(ctx, ds, models.FitOptions{Seed: 5, Workers: 1, Params: given}, instance)
		if err != nil {
			t.Fatal(err)
		}
		a, err := m.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		b, err := w.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("instance=%v: the selected fit (C=%g gamma=%g) differs from the fit with them given", instance, c.C, c.Gamma)
		}
	}
}

// TestBoundFreeReuseMatchesFit: the inner CV with the reuse of a
// bound-free smaller C's scores (boundFree) gives exactly the scores it
// gives when every candidate is trained, with and without warm starts, on
// problems where the reuse happens (at least once per case). It catches a
// reuse of a fit that reached a box (whose larger C trains another SVM)
// and a reuse across gammas or folds.
func TestBoundFreeReuseMatchesFit(t *testing.T) {
	tests := []struct {
		name     string
		ds       *mil.Dataset
		instance bool
		params   models.Params
	}{
		{"MI-SVM rbf 20 features", binaryToy(4, 36, 20), false, models.Params{}},
		{"mi-SVM rbf 20 features", binaryToy(4, 36, 20), true, models.Params{}},
		{"mi-SVM rbf 8 features, C from 1", binaryToy(12, 48, 8), true, models.Params{}},
		{"MI-SVM poly 20 features", binaryToy(5, 30, 20), false, models.Params{"kernel": "poly", "degree": "2"}},
		{"mi-SVM rbf 40 features", binaryToy(6, 40, 40), true, models.Params{"kernel": "rbf"}},
		{"mi-SVM rbf three classes", multiToy(8, 45, 20), true, models.Params{}},
		{"MI-SVM rbf three classes", multiToy(7, 45, 20), false, models.Params{"kernel": "rbf"}},
	}
	ctx := context.Background()
	for _, tc := range tests {
		for _, warm := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/warm=%v", tc.name, warm), func(t *testing.T) {
				opt, cfg, data, cands, fs := selectSetup(t, tc.ds, tc.params)
				if strings.Contains(tc.name, "C from 1") {
					// The grid's gammas, each with C from 1 (gamma outer,
					// C inner, as grid orders them).
					var wide []candidate
					for _, c := range cands {
						if c.C == cands[0].C {
							for _, cc := range []float64{1, 10, 1e2, 1e3, 1e4} {
								wide = append(wide, candidate{C: cc, Gamma: c.Gamma})
							}
						}
					}
					cands = wide
				}
				var reused atomic.Int64
				got, _, err := cvScoresOuter(ctx, tc.ds, data, fs, opt, tc.instance, cfg.Kernel, cands, outerCV{warm: warm, reused: &reused})
				if err != nil {
					t.Fatal(err)
				}
				skipped := reused.Load()
				want, _, err := cvScoresOuter(ctx, tc.ds, data, fs, opt, tc.instance, cfg.Kernel, cands, outerCV{warm: warm, noReuse: true})
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("candidate %v fold %d: held-out accuracy %v with reuse, %v trained", cands[i/len(fs)], i%len(fs), got[i], want[i])
					}
				}
				t.Logf("%d of %d candidate folds reused", skipped, len(want))
				if skipped == 0 {
					t.Errorf("no candidate reused: the case does not test the reuse")
				}
			})
		}
	}
}

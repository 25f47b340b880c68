package misvm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/folds"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// TestWarmSelectionAudit replays the inner cross-validation of every fit
// of an evaluation run twice, with the warm-started relabeling rounds and
// shrinking SMO the default uses (cvScoresOuter warm) and with every round
// from 0 without shrinking (the
// scores of a Fit per candidate, TestOuterCVMatchesFit), and fails when
// a fit would choose another C or gamma; the final model of a fit depends
// on its data and the chosen pair only, so equal choices mean the
// evaluation's models, and accuracy, are unchanged. It also counts the fits
// whose choice differs from the former inner CV's (cvScoresShared: each
// inner fold scaled by its own training instances). It is slow (three inner
// CVs of 30–50 fits), so it runs only when asked:
//
//	MISVM_AUDIT=DATA,FOLDS,EVAL,MODEL go test ./internal/models/misvm -run WarmSelectionAudit -v -timeout 1h
//
// with FOLDS the --folds-out file and EVAL the --json result of `retrainer
// eval --data DATA --model MODEL` (any model: only the folds' fit seeds are
// read), MODEL misvm or mi-svm. docs/reproductions/misvm-comparison.md
// lists the runs made.
func TestWarmSelectionAudit(t *testing.T) {
	spec := os.Getenv("MISVM_AUDIT")
	if spec == "" {
		t.Skip("set MISVM_AUDIT=DATA,FOLDS,EVAL,MODEL to audit the warm-started inner CV on an evaluation's folds")
	}
	parts := strings.Split(spec, ",")
	if len(parts) != 4 {
		t.Fatalf("MISVM_AUDIT=%q: want DATA,FOLDS,EVAL,MODEL", spec)
	}
	ds, err := dataset.Load(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	var fl struct {
		Fits []struct {
			Repeat, Fold int
			Train        []int
		}
	}
	var ev struct {
		FoldResults []struct {
			Repeat, Fold int
			FitSeed      int64 `json:"fit_seed"`
		} `json:"fold_results"`
	}
	for _, f := range []struct {
		path string
		dst  any
	}{{parts[1], &fl}, {parts[2], &ev}} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, f.dst); err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
	}
	seeds := map[[2]int]int64{}
	for _, r := range ev.FoldResults {
		seeds[[2]int{r.Repeat, r.Fold}] = r.FitSeed
	}
	instance := parts[3] == MiSVMName
	ctx := context.Background()
	same, scoresDiffer, moved := 0, 0, 0
	for _, fit := range fl.Fits {
		seed, ok := seeds[[2]int{fit.Repeat, fit.Fold}]
		if !ok {
			t.Fatalf("no fit seed for repeat %d fold %d", fit.Repeat, fit.Fold)
		}
		train := ds.Subset(fit.Train)
		// What Fit does before selectParams, with the default parameters.
		opt := models.FitOptions{Seed: seed, Workers: 1, Params: models.Params{}}
		cfg, err := ParseParams(opt.Params)
		if err != nil {
			t.Fatal(err)
		}
		data, err := ovr.Prepare(train, cfg.Scale)
		if err != nil {
			t.Fatal(err)
		}
		cfg = cfg.resolve(len(data.Rows))
		if cfg.Kernel == KernelLinear {
			t.Fatalf("%d training instances: the default is linear here, nothing to audit", len(data.Rows))
		}
		cands := grid(opt, cfg, GammaScale(data.Rows))
		fs, err := folds.KFold(len(data.BagIndex), selectFolds, opt.Seed, selectStream)
		if err != nil {
			t.Fatal(err)
		}
		var best [2]int
		var scores [2][]float64
		for i, warm := range []bool{false, true} {
			if scores[i], _, err = cvScoresOuter(ctx, train, data, fs, opt, instance, cfg.Kernel, cands, outerCV{warm: warm}); err != nil {
				t.Fatal(err)
			}
			best[i] = bestCandidate(scores[i], len(fs))
		}
		differ := fmt.Sprint(scores[0]) != fmt.Sprint(scores[1])
		if differ {
			scoresDiffer++
		}
		if best[0] != best[1] {
			t.Errorf("repeat %d fold %d: warm start chooses %+v, from 0 %+v", fit.Repeat, fit.Fold, cands[best[1]], cands[best[0]])
		} else {
			same++
		}
		// The choice of the former inner CV (each inner fold scaled by
		// its own training instances, warm), for the record.
		former, err := cvScoresShared(ctx, train, data.BagIndex, fs, opt, instance, cfg.Kernel, cands, true)
		if err != nil {
			t.Fatal(err)
		}
		fb := bestCandidate(former, len(fs))
		if fb != best[1] {
			moved++
		}
		t.Logf("repeat %d fold %d: %+v (inner fold accuracies differ: %v; former inner CV: %+v)", fit.Repeat, fit.Fold, cands[best[0]], differ, cands[fb])
	}
	t.Logf("%s %s: %d of %d fits choose the same C and gamma; %d with some inner fold accuracy changed; %d choose otherwise than the former inner CV (own scaler per inner fold)", parts[0], parts[3], same, len(fl.Fits), scoresDiffer, moved)
}

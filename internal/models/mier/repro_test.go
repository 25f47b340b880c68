package mier

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// TestSceneReproduction is the Table 1 (Scene) reproduction: 5-fold
// cross-validation on Zhou's MIML scene images. It takes minutes, so it runs
// only when MIER_REPRO is set:
//
//	MIER_REPRO=1 go test -run TestSceneReproduction -v -timeout 60m ./internal/models/mier
//
// MIER_CONFIGS overrides the configurations: ';'-separated lists of
// key=value model parameters separated by ','. MIER_SEED sets the seed (1).
// MIER_RUNFOLDS=n evaluates only the first n of the 5 outer folds (same
// split), to estimate the cost of an expensive configuration before a full run.
func TestSceneReproduction(t *testing.T) {
	if os.Getenv("MIER_REPRO") == "" {
		t.Skip("set MIER_REPRO=1 to run the Scene reproduction (minutes)")
	}
	ds, err := dataset.Load("../../../testdata/miml_image_zhou/miml_03_data.arff")
	if err != nil {
		t.Fatal(err)
	}
	configs := []string{
		"mode=shared,classifier=svm", "mode=shared,classifier=knn",
		"mode=perbag,classifier=svm", "mode=perbag,classifier=knn",
		"mode=none,classifier=svm", "mode=none,classifier=knn",
	}
	if s := os.Getenv("MIER_CONFIGS"); s != "" {
		configs = strings.Split(s, ";")
	}
	var seed int64 = 1
	if s := os.Getenv("MIER_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	runFolds := 5
	if s := os.Getenv("MIER_RUNFOLDS"); s != "" {
		fmt.Sscan(s, &runFolds)
	}
	t.Logf("%-50s %-13s %-13s %-13s %-13s %-13s %s", "params", "hamming", "one-error", "coverage", "rank loss", "avg prec", "train s")
	for _, c := range configs {
		p := models.Params{}
		for _, kv := range strings.Split(c, ",") {
			k, v, _ := strings.Cut(kv, "=")
			p[k] = v
		}
		row, err := crossValidate(context.Background(), ds, p, 5, runFolds, seed)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		t.Logf("%-50s %s", c, row)
	}
}

// crossValidate runs k-fold CV on the first run folds (all k when run is
// out of range) and formats mean±std of the five measures over them.
func crossValidate(ctx context.Context, ds *mil.Dataset, p models.Params, k, run int, seed int64) (string, error) {
	if run < 1 || run > k {
		run = k
	}
	perm := rand.New(rand.NewPCG(uint64(seed), 99)).Perm(len(ds.Bags))
	var res []measure.Result
	var train time.Duration
	for f := 0; f < run; f++ {
		tr := &mil.Dataset{Name: ds.Name, Classes: ds.Classes, Dim: ds.Dim}
		var test []int
		for pos, i := range perm {
			if pos%k == f {
				test = append(test, i)
			} else {
				tr.Bags = append(tr.Bags, ds.Bags[i])
			}
		}
		start := time.Now()
		m, err := Fit(ctx, tr, models.FitOptions{Seed: seed, Params: p})
		if err != nil {
			return "", err
		}
		train += time.Since(start)
		acc := measure.NewAccumulator(len(ds.Classes))
		for _, i := range test {
			a, err := m.Annotate(ctx, &ds.Bags[i], models.Inductive)
			if err != nil {
				return "", err
			}
			if err := acc.Add(&ds.Bags[i], measure.Prediction{BagLabels: a.BagLabels, BagScores: a.BagScores}); err != nil {
				return "", err
			}
		}
		res = append(res, acc.Result())
	}
	var b strings.Builder
	for _, get := range []func(measure.Result) float64{
		func(r measure.Result) float64 { return r.HammingLoss },
		func(r measure.Result) float64 { return r.OneError },
		func(r measure.Result) float64 { return r.Coverage },
		func(r measure.Result) float64 { return r.RankingLoss },
		func(r measure.Result) float64 { return r.AveragePrecision },
	} {
		var s, ss float64
		for _, r := range res {
			s += get(r)
		}
		mean := s / float64(len(res))
		for _, r := range res {
			ss += (get(r) - mean) * (get(r) - mean)
		}
		sd := 0.0
		if len(res) > 1 {
			sd = math.Sqrt(ss / float64(len(res)-1))
		}
		fmt.Fprintf(&b, "%.3f±%.3f   ", mean, sd)
	}
	fmt.Fprintf(&b, "%.1f", train.Seconds())
	return b.String(), nil
}

package mimlca

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/metrics"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// cvResult is a k-fold cross-validation outcome: the mean and standard
// deviation over folds of each measure, and the total training time.
type cvResult struct {
	mean, std map[string]float64
	train     time.Duration
}

// crossValidate runs k-fold CV of one kind on ds in one mode. Folds are a
// seeded permutation of the bags cut in k nearly equal parts.
func crossValidate(t *testing.T, ds *mil.Dataset, kind models.Kind, params models.Params, mode models.Mode, folds int, seed int64) cvResult {
	t.Helper()
	perm := rand.New(rand.NewPCG(uint64(seed), 0)).Perm(len(ds.Bags))
	per := map[string][]float64{}
	var train time.Duration
	for f := 0; f < folds; f++ {
		var tr, te []int
		for i, b := range perm {
			if i*folds/len(perm) == f {
				te = append(te, b)
			} else {
				tr = append(tr, b)
			}
		}
		start := time.Now()
		m, err := kind.Fit(context.Background(), ds.Subset(tr), models.FitOptions{Seed: seed, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		train += time.Since(start)
		acc := metrics.NewAccumulator(len(ds.Classes))
		test := ds.Subset(te)
		for i := range test.Bags {
			b := &test.Bags[i]
			q := *b
			if mode == models.Inductive {
				q.Labels = nil // the model must not see the label
			}
			a, err := m.Annotate(context.Background(), &q, mode)
			if err != nil {
				t.Fatal(err)
			}
			if err := acc.Add(b, metrics.Prediction{InstanceLabels: a.InstanceLabels, BagLabels: a.BagLabels, BagScores: a.BagScores}); err != nil {
				t.Fatal(err)
			}
		}
		for name, v := range acc.Result().Values() {
			per[name] = append(per[name], v)
		}
	}
	r := cvResult{mean: map[string]float64{}, std: map[string]float64{}, train: train}
	for name, vs := range per {
		s, ss := 0.0, 0.0
		for _, v := range vs {
			s += v
		}
		mu := s / float64(len(vs))
		for _, v := range vs {
			ss += (v - mu) * (v - mu)
		}
		r.mean[name], r.std[name] = mu, math.Sqrt(ss/float64(len(vs)))
	}
	return r
}

// reproEnv gates the cross-validations on real data: they take minutes on a
// shared machine. Run them with
//
//	MIMLCA_REPRO=1 go test -v -run 'MSCV2|Zhou' -timeout 60m ./internal/models/mimlca/
const reproEnv = "MIMLCA_REPRO"

func loadTestdata(t *testing.T, rel string) *mil.Dataset {
	t.Helper()
	if os.Getenv(reproEnv) == "" {
		t.Skipf("set %s=1 to run the cross-validation on %s", reproEnv, rel)
	}
	path := filepath.Join("..", "..", "..", "testdata", rel)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("test data %s not present: %v", rel, err)
	}
	ds, err := dataset.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestMSCV2InstanceAccuracy(t *testing.T) {
	ds := loadTestdata(t, "mscv2/MSCV2.mat")
	for _, tc := range []struct {
		name   string
		params models.Params
		mode   models.Mode
	}{
		{"linear-centroid", models.Params{}, models.Inductive},
		{"linear-centroid", models.Params{}, models.Transductive},
		{"linear-alpha", models.Params{"rule": "alpha"}, models.Inductive},
		{"linear-alpha", models.Params{"rule": "alpha"}, models.Transductive},
		{"euclidean", models.Params{"metric": "euclidean"}, models.Inductive},
		{"euclidean", models.Params{"metric": "euclidean"}, models.Transductive},
		{"rbf-alpha", models.Params{"kernel": "rbf", "rule": "alpha"}, models.Inductive},
		{"rbf-alpha", models.Params{"kernel": "rbf", "rule": "alpha"}, models.Transductive},
	} {
		r := crossValidate(t, ds, Kind(), tc.params, tc.mode, 10, 1)
		t.Logf("%-16s %-12s acc %.3f ± %.3f  train %v", tc.name, tc.mode, r.mean[metrics.InstanceAccuracy], r.std[metrics.InstanceAccuracy], r.train)
	}
}

func TestZhouSceneBagMetrics(t *testing.T) {
	ds := loadTestdata(t, "miml_image_zhou/miml_03_data.arff")
	for _, tc := range []struct {
		name   string
		params models.Params
	}{
		{"learned-min", models.Params{}},
		{"euclidean-min", models.Params{"metric": "euclidean"}},
		{"learned-max", models.Params{"hausdorff": "max"}},
		{"euclidean-max", models.Params{"metric": "euclidean", "hausdorff": "max"}},
		{"rbf-min", models.Params{"kernel": "rbf", "landmarks": "300"}},
		{"rbf-max", models.Params{"kernel": "rbf", "landmarks": "300", "hausdorff": "max"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := crossValidate(t, ds, Kind(), tc.params, models.Inductive, 5, 1)
			t.Logf("%-14s HL %.3f RL %.3f OE %.3f Cov %.3f AP %.3f (±%.3f) train %v", tc.name,
				r.mean[metrics.HammingLoss], r.mean[metrics.RankingLoss], r.mean[metrics.OneError], r.mean[metrics.Coverage],
				r.mean[metrics.AveragePrecision], r.std[metrics.AveragePrecision], r.train)
		})
	}
}

package orlr

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// cvAccuracy is the paper's inductive protocol (Section 6.2): k-fold
// cross-validation over bags; the model is fitted on the training folds'
// bag labels and predicts every instance of the test bags without their bag
// labels. It returns the mean and standard deviation of the per-fold
// instance accuracy.
func cvAccuracy(t *testing.T, kind models.Kind, d *mil.Dataset, folds int, seed int64, params models.Params) (float64, float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 99))
	perm := rng.Perm(len(d.Bags))
	var accs []float64
	for f := range folds {
		var trainIdx, testIdx []int
		for i, b := range perm {
			if i%folds == f {
				testIdx = append(testIdx, b)
			} else {
				trainIdx = append(trainIdx, b)
			}
		}
		m, err := kind.Fit(context.Background(), d.Subset(trainIdx), models.FitOptions{Seed: seed + int64(f), Params: params})
		if err != nil {
			t.Fatal(err)
		}
		right, total := 0, 0
		for _, i := range testIdx {
			q := d.Bags[i]
			q.Labels, q.InstanceLabels = nil, nil
			a, err := m.Annotate(context.Background(), &q, models.Inductive)
			if err != nil {
				t.Fatal(err)
			}
			for j, y := range d.Bags[i].InstanceLabels {
				if a.InstanceLabels[j] == y {
					right++
				}
				total++
			}
		}
		accs = append(accs, 100*float64(right)/float64(total))
	}
	return meanStd(accs)
}

// transductiveAccuracy is the transductive protocol (Section 6.2, Table 5):
// fit on all bags, then annotate every bag with its bag label known.
func transductiveAccuracy(t *testing.T, kind models.Kind, d *mil.Dataset, seed int64, params models.Params) float64 {
	t.Helper()
	m, err := kind.Fit(context.Background(), d, models.FitOptions{Seed: seed, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	right, total := 0, 0
	for i := range d.Bags {
		q := d.Bags[i]
		q.InstanceLabels = nil
		a, err := m.Annotate(context.Background(), &q, models.Transductive)
		if err != nil {
			t.Fatal(err)
		}
		for j, y := range d.Bags[i].InstanceLabels {
			if a.InstanceLabels[j] == y {
				right++
			}
			total++
		}
	}
	return 100 * float64(right) / float64(total)
}

func meanStd(xs []float64) (float64, float64) {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)-1))
}

func loadTestdata(t *testing.T, rel string) *mil.Dataset {
	t.Helper()
	d, err := dataset.Load("../../../testdata/" + rel)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// paramsFromEnv reads extra parameters from ORLR_PARAMS="k=v,k=v".
func paramsFromEnv(base models.Params) models.Params {
	p := models.Params{}
	for k, v := range base {
		p[k] = v
	}
	for _, kv := range strings.Split(os.Getenv("ORLR_PARAMS"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			p[k] = v
		}
	}
	return p
}

// TestExperiment is a tuning aid, not a check: ORLR_EXPERIMENT=path/in/testdata.
func TestExperiment(t *testing.T) {
	path := os.Getenv("ORLR_EXPERIMENT")
	if path == "" {
		t.Skip("set ORLR_EXPERIMENT")
	}
	d := loadTestdata(t, path)
	p := paramsFromEnv(nil)
	start := time.Now()
	m, s := cvAccuracy(t, Kind(), d, 10, 1, p)
	t.Logf("%s %v inductive %.1f ± %.1f (%v)", path, p, m, s, time.Since(start))
	if os.Getenv("ORLR_TRANS") != "" {
		start = time.Now()
		t.Logf("transductive %.1f (%v)", transductiveAccuracy(t, Kind(), d, 1, p), time.Since(start))
	}
}

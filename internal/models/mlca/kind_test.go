package mlca

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/mimlstream/mimlstream/internal/metriclearn"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/modeltest"
	"github.com/mimlstream/mimlstream/internal/testsupport/synth"
)

func synthData(t *testing.T, seed uint64) *mil.Dataset {
	t.Helper()
	g := synth.MIML{Bags: 120, Dim: 6, Classes: 4, MaxLabels: 2, MaxPerLabel: 2, Spread: 0.1}
	ds, err := g.Generate(rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestFitSupervisedRecoversClasses(t *testing.T) {
	ds := synthData(t, 5)
	train, test := ds.Subset(modeltest.Seq(0, 100)), ds.Subset(modeltest.Seq(100, 120))
	cases := []struct {
		name   string
		params models.Params
		minAcc float64
	}{
		{"linear-centroid", models.Params{}, 0.95},
		{"linear-alpha", models.Params{"rule": "alpha", "alpha": "0.5"}, 0.95},
		{"euclidean", models.Params{"metric": "euclidean"}, 0.95},
		{"rbf", models.Params{"kernel": "rbf", "landmarks": "100"}, 0.95},
		{"chi2", models.Params{"kernel": "chi2", "landmarks": "0"}, 0.9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			train, test := train, test
			if tc.params["kernel"] == metriclearn.KernelChi2 {
				train, test = modeltest.NonNegative(train), modeltest.NonNegative(test)
			}
			m, err := Kind().Fit(context.Background(), train, models.FitOptions{Seed: 2, Params: tc.params})
			if err != nil {
				t.Fatal(err)
			}
			ok, tot := 0, 0
			for i := range test.Bags {
				b := test.Bags[i]
				b.Labels = nil
				a, err := m.Annotate(context.Background(), &b, models.Inductive)
				if err != nil {
					t.Fatal(err)
				}
				for j, l := range a.InstanceLabels {
					tot++
					if l == b.InstanceLabels[j] {
						ok++
					}
				}
				if len(a.BagScores) != 4 || len(a.InstanceScores) != len(b.Instances) {
					t.Fatalf("annotation shape: %d bag scores, %d instance score rows", len(a.BagScores), len(a.InstanceScores))
				}
			}
			if acc := float64(ok) / float64(tot); acc < tc.minAcc {
				t.Fatalf("instance accuracy %.3f < %.2f", acc, tc.minAcc)
			}
		})
	}
}

func TestEncodeDecodeRoundTripAndConcurrency(t *testing.T) {
	ds := synthData(t, 17)
	for _, params := range []models.Params{{}, {"kernel": "rbf", "landmarks": "40", "rule": "alpha"}, {"metric": "euclidean", "refs": "0", "citers": "0"}} {
		m, err := Kind().Fit(context.Background(), ds.Subset(modeltest.Seq(0, 100)), models.FitOptions{Seed: 4, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		blob, err := models.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := models.NewRegistry(Kind()).Decode(blob)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]models.Annotation, 20)
		for i := range want {
			if want[i], err = m.Annotate(context.Background(), &ds.Bags[100+i], models.Inductive); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4*len(want))
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range want {
					got, err := back.Annotate(context.Background(), &ds.Bags[100+i], models.Inductive)
					if err != nil {
						errs <- err
						return
					}
					if !reflect.DeepEqual(got, want[i]) {
						errs <- errors.New("decoded model annotates differently")
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("%v: %v", params, err)
		}
	}
}

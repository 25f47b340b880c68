package mier

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset"
)

// BenchmarkFitShared times Algorithm 3 on the pooled instances of 400 Scene
// bags (3600 instances, d=15, r=2), with the paper's backtracking restart
// (m = 1 at every iteration) and with the adaptive initial step:
//
//	go test -run '^$' -bench FitShared -benchtime 3x ./internal/models/mier
func BenchmarkFitShared(b *testing.B) {
	ds, err := dataset.Load("../../../testdata/miml_image_zhou/miml_03_data.arff")
	if err != nil {
		b.Fatal(err)
	}
	var groups [][][]float64
	for _, bag := range ds.Bags[:400] {
		groups = append(groups, bag.Instances)
	}
	p, err := NewProblem(groups, 3)
	if err != nil {
		b.Fatal(err)
	}
	w0 := RandomOrthonormal(rand.New(rand.NewPCG(1, 1)), 15, 2)
	for _, tc := range []struct {
		name     string
		adaptive bool
	}{{"paper-restart", false}, {"adaptive", true}} {
		b.Run(tc.name, func(b *testing.B) {
			opt := DefaultOptions(2)
			opt.Adaptive = tc.adaptive
			var res Result
			for i := 0; i < b.N; i++ {
				if res, err = p.Fit(context.Background(), w0, opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(res.J)-1), "steps")
			b.ReportMetric(res.J[len(res.J)-1], "J")
		})
	}
}

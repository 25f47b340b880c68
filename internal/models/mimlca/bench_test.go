package mimlca

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/synth"
)

// BenchmarkFit measures Algorithm 1 (metric learning only: refs=citers=0, so
// no citation-kNN index) on synthetic data shaped like MSCV2 (48 dims, 23
// classes, about 3 instances per bag) at 1x, 10x and 100x its 591 bags. Time
// per instance should stay flat if training is linear in n:
//
//	go test -run '^$' -bench 'Fit/' -benchtime 3x ./internal/models/mimlca/
func BenchmarkFit(b *testing.B) {
	for _, factor := range []int{1, 10, 100} {
		ds, err := synth.MSCV2Like(factor).Generate(rand.New(rand.NewPCG(1, uint64(factor))))
		if err != nil {
			b.Fatal(err)
		}
		n := ds.NumInstances()
		for _, restarts := range []int{1, 10} {
			b.Run(fmt.Sprintf("x%d/n=%d/restarts=%d", factor, n, restarts), func(b *testing.B) {
				opt := models.FitOptions{Seed: 1, Params: models.Params{"refs": "0", "citers": "0", "restarts": fmt.Sprint(restarts)}}
				iters := 0
				cpu0 := cpuTime()
				for b.Loop() {
					_, res, err := Fit(context.Background(), ds, opt)
					if err != nil {
						b.Fatal(err)
					}
					iters = res.Iterations
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/instance")
				// The machine is shared: CPU time is the steadier measure.
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/instance")
				b.ReportMetric(float64(iters), "iters(best)")
			})
		}
	}
}

// BenchmarkCitationIndex measures the full default fit, including the
// citation radii of every training bag (one search of the citation-kNN
// index per bag; BenchmarkCitationKNNIndex in internal/metriclearn times
// the index alone against the brute force, up to 200k bags).
func BenchmarkCitationIndex(b *testing.B) {
	for _, factor := range []int{1, 10} {
		ds, err := synth.MSCV2Like(factor).Generate(rand.New(rand.NewPCG(1, uint64(factor))))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("x%d/bags=%d", factor, len(ds.Bags)), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := Fit(context.Background(), ds, models.FitOptions{Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAnnotate measures one inductive annotation (centroids and
// citation-kNN over the 591 training bags) of an MSCV2-sized model.
func BenchmarkAnnotate(b *testing.B) {
	ds, err := synth.MSCV2Like(1).Generate(rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	m, _, err := Fit(context.Background(), ds, models.FitOptions{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	bag := ds.Bags[0]
	bag.Labels = nil
	for b.Loop() {
		if _, err := m.Annotate(context.Background(), &bag, models.Inductive); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the user+system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

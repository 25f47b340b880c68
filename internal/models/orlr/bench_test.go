package orlr

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/models"
)

// BenchmarkEStep times one E-step over every MSCV2 bag (random weights: the
// cost does not depend on their values) with each programme. The ratio
// forward/fas is the point: the paper's Table 9 predicts ≈ 6.4 for MSCV2
// (680,112 / 105,584 for the DP term alone).
//
//	go test ./internal/models/orlr -run '^$' -bench EStep -benchtime 20x
func BenchmarkEStep(b *testing.B) {
	d, err := loadBench()
	if err != nil {
		b.Skip(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	nc := len(d.Classes)
	type bag struct {
		logits [][]float64
		labels []int
		post   [][]float64
	}
	var bags []bag
	for i := range d.Bags {
		db := &d.Bags[i]
		bg := bag{labels: db.Labels}
		for range db.Instances {
			z := make([]float64, nc)
			for c := range z {
				z[c] = rng.NormFloat64()
			}
			bg.logits = append(bg.logits, z)
			bg.post = append(bg.post, make([]float64, len(db.Labels)))
		}
		bags = append(bags, bg)
	}
	for _, alg := range []Algorithm{FAS, Forward} {
		b.Run(string(alg), func(b *testing.B) {
			s := newBagScratch()
			for b.Loop() {
				for _, bg := range bags {
					if _, err := bagPosteriors(s, alg, bg.logits, bg.labels, bg.post); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkFitMSCV2 times a full fit (50 EM iterations) on all MSCV2 bags
// with all cores: the default, the paper's setting (mstep=gd, raw
// features, as the paper table of docs/reproductions/orlr-mscv2.md) and
// variants of the default.
//
//	go test ./internal/models/orlr -run '^$' -bench FitMSCV2 -benchtime 1x
func BenchmarkFitMSCV2(b *testing.B) {
	d, err := loadBench()
	if err != nil {
		b.Skip(err)
	}
	for _, v := range []struct {
		name   string
		params models.Params
	}{
		{"default", models.Params{}},
		{"paper", paperParams()},
		{"estep=forward", models.Params{"estep": "forward"}},
		{"subset=0.8", models.Params{"subset": "0.8"}},
		{"subset=0.5", models.Params{"subset": "0.5"}},
		{"subset=0.2", models.Params{"subset": "0.2"}},
	} {
		b.Run(v.name, func(b *testing.B) {
			cpu0 := processCPU()
			for b.Loop() {
				if _, err := Fit(context.Background(), d, models.FitOptions{Seed: 1, Params: v.params}); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time is what the load of other processes does not inflate.
			b.ReportMetric((processCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// BenchmarkEStepLargeBags isolates the programmes on bags where the DP term
// dominates (|Y| = 6, 23 classes): forward/fas should grow about linearly
// with n (O(n²) against O(n)).
//
//	go test ./internal/models/orlr -run '^$' -bench EStepLargeBags -benchtime 20x
func BenchmarkEStepLargeBags(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	labels := []int{0, 3, 5, 8, 13, 21}
	for _, n := range []int{6, 20, 60} {
		logits := make([][]float64, n)
		post := make([][]float64, n)
		for i := range logits {
			logits[i] = make([]float64, 23)
			for c := range logits[i] {
				logits[i][c] = rng.NormFloat64()
			}
			post[i] = make([]float64, len(labels))
		}
		for _, alg := range []Algorithm{FAS, Forward} {
			b.Run(fmt.Sprintf("n=%d/%s", n, alg), func(b *testing.B) {
				s := newBagScratch()
				for b.Loop() {
					if _, err := bagPosteriors(s, alg, logits, labels, post); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

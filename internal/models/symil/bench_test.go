package symil

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// musk1Problem is the whole of Musk1 as one binary problem (λ = 0.5,
// C = 10⁴), with the trainer holding its features.
func musk1Problem(b *testing.B, params models.Params) (*trainer, *problem) {
	b.Helper()
	ds, err := dataset.Load("../../../testdata/musk1/musk1.data")
	if err != nil {
		b.Skip(err)
	}
	data, err := ovr.Prepare(ds, ovr.ScaleZScore)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := ParseParams(params)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := newTrainer(cfg, data.Rows)
	if err != nil {
		b.Fatal(err)
	}
	return tr, newProblem(data.Bags, data.Positive(0), cfg.C, 0.5)
}

// BenchmarkSGD measures the primal solver on Musk1 (92 bags, 476 instances,
// 166 features + bias) per epoch, beside the baseline the paper compares
// training cost with: one exhaustive inference pass (the h⁺/h⁻ search) over
// every bag. The ratio epoch/inference is the SGD's overhead over pure
// inference (the paper: "the most time consuming step is the inference").
//
//	go test -run '^$' -bench 'SGD|Subproblem' -benchtime 2s ./internal/models/symil/
func BenchmarkSGD(b *testing.B) {
	tr, p := musk1Problem(b, models.Params{"kernel": "linear", "lambda": "0.5"})
	ht := p.randomLatent(rand.New(rand.NewPCG(1, 1)))
	w := make([]float64, len(tr.lin.x[0]))
	for j := range w {
		w[j] = 0.01 * float64(j%7-3)
	}
	b.Run("inference-pass", func(b *testing.B) {
		var s []float64
		for b.Loop() {
			s = tr.lin.scores(p, w, s)
			_ = p.infer(s)
		}
	})
	b.Run("sgd-epoch", func(b *testing.B) {
		one := *tr.lin
		one.epochs = 1
		rng := rand.New(rand.NewPCG(2, 2))
		tau := 0.0
		v := append([]float64(nil), w...)
		for b.Loop() {
			if _, err := one.sgd(context.Background(), p, ht, v, &tau, rng); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSubproblem solves one CCCP subproblem of Musk1 (fixed latent
// variables) with the default SGD (50 epochs) and with the linear-kernel
// cutting-plane dual (100 planes), the two solvers of the linear kernel.
func BenchmarkSubproblem(b *testing.B) {
	for _, solver := range []string{"sgd", "cp"} {
		b.Run(solver, func(b *testing.B) {
			tr, p := musk1Problem(b, models.Params{"kernel": "linear", "lambda": "0.5", "solver": solver})
			ht := p.randomLatent(rand.New(rand.NewPCG(1, 1)))
			for b.Loop() {
				if solver == "sgd" {
					tau := 0.0
					w := make([]float64, len(tr.lin.x[0]))
					if _, err := tr.lin.sgd(context.Background(), p, ht, w, &tau, rand.New(rand.NewPCG(3, 3))); err != nil {
						b.Fatal(err)
					}
				} else if _, err := tr.ker.cuttingPlane(context.Background(), p, ht); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAnnotateMusk1 is the serving cost of a SyMIL model per Musk1
// bag (5.2 instances on average) for each kernel: a linear scorer is one
// dot product per instance, an RBF one a kernel evaluation against every
// support vector, so the default kernel's choice (rbf on dense data) is
// paid here by the annotator.
func BenchmarkAnnotateMusk1(b *testing.B) {
	ds, err := dataset.Load("../../../testdata/musk1/musk1.data")
	if err != nil {
		b.Skip(err)
	}
	for _, kernel := range []string{KernelLinear, KernelRBF} {
		b.Run("kernel="+kernel, func(b *testing.B) {
			m, err := Fit(context.Background(), ds, models.FitOptions{Seed: 1, Workers: 1,
				Params: models.Params{"kernel": kernel, "lambda": "0.5", "restarts": "1"}})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			n := 0
			for b.Loop() {
				bag := &ds.Bags[n%len(ds.Bags)]
				if _, err := m.Annotate(context.Background(), bag, models.Inductive); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if sv := m.State().Scorers[0].SV; sv != nil {
				b.ReportMetric(float64(len(sv)), "support-vectors")
			}
		})
	}
}

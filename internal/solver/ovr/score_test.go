package ovr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// scoreOneAtATime is the kernel scorer as it was before the support
// vectors were taken in blocks: the reference Score must equal.
func scoreOneAtATime(s *Scorer, z []float64) float64 {
	v := s.B
	for u, sv := range s.SV {
		d := 0.0
		for j, x := range sv {
			if s.Kernel == KernelPoly {
				d += x * z[j]
			} else {
				e := x - z[j]
				d += e * e
			}
		}
		if s.Kernel == KernelPoly {
			v += s.Beta[u] * math.Pow(s.Gamma*d+s.Coef0, float64(s.Degree))
		} else {
			v += s.Beta[u] * math.Exp(-s.Gamma*d)
		}
	}
	return v
}

// randomKernelScorer draws a kernel scorer with nsv support vectors of
// dimension dim, its entries spread over several orders of magnitude so
// that a changed summation order would show in the last bits.
func randomKernelScorer(r *rand.Rand, kernel string, nsv, dim int) *Scorer {
	s := &Scorer{Kernel: kernel, Gamma: 0.5 / float64(dim), B: r.NormFloat64(), Degree: 1 + r.IntN(3), Coef0: r.Float64()}
	for range nsv {
		sv := make([]float64, dim)
		for j := range sv {
			sv[j] = r.NormFloat64() * math.Pow(10, float64(r.IntN(5)-2))
		}
		s.SV = append(s.SV, sv)
		s.Beta = append(s.Beta, r.NormFloat64())
	}
	return s
}

// TestScoreMatchesOneAtATime holds the kernel scorer (its support vectors'
// blocks, 64 at a time) to the one-at-a-time loop bit for bit, validated
// (blocks laid out once, as every Model's scorer) or not (laid out per
// call), for both kernels, support vector counts across the chunks of 64
// and every remainder modulo 4, and z longer than the support vectors (only
// the first dim features count). It fails if a feature is skipped or
// repeated, the terms are added out of support vector order, a chunk's tail
// is mis-sized, a coefficient is paired with another support vector's
// kernel value, or ExpScaled or the blocks' sums differ from the loop's
// floats.
func TestScoreMatchesOneAtATime(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	counts := []int{63, 64, 65, 66, 67, 128, 131, 250}
	for nsv := range 14 {
		counts = append(counts, nsv)
	}
	for _, kernel := range []string{"rbf", KernelPoly} {
		for _, nsv := range counts {
			for _, dim := range []int{1, 3, 4, 17, 166} {
				for _, validated := range []bool{false, true} {
					s := randomKernelScorer(r, kernel, nsv, dim)
					if validated {
						if err := s.validate(dim); err != nil {
							t.Fatal(err)
						}
						if nsv > 0 && s.blocks == nil {
							t.Fatal("a validated dense kernel scorer has no blocks")
						}
					}
					for trial := range 10 {
						z := make([]float64, dim+trial%2)
						for j := range z {
							z[j] = r.NormFloat64() * math.Pow(10, float64(r.IntN(5)-2))
						}
						got, want := s.Score(z), scoreOneAtATime(s, z)
						if math.Float64bits(got) != math.Float64bits(want) {
							t.Fatalf("%s, %d support vectors, dim %d, validated %v: Score %v, one at a time %v", kernel, nsv, dim, validated, got, want)
						}
					}
				}
			}
		}
	}
}

// BenchmarkScoreKernel is one instance's score by an RBF scorer of the
// size a Musk1 SyMIL model has (119 support vectors of 166 features):
// through the blocks a Model's scorers have, and one at a time (the
// reference).
func BenchmarkScoreKernel(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	s := randomKernelScorer(r, "rbf", 119, 166)
	z := make([]float64, 166)
	for j := range z {
		z[j] = r.NormFloat64()
	}
	blocked := *s
	if err := blocked.validate(166); err != nil {
		b.Fatal(err)
	}
	for _, impl := range []struct {
		name  string
		score func(*Scorer, []float64) float64
	}{
		{"blocks", func(_ *Scorer, z []float64) float64 { return blocked.Score(z) }},
		{"one-at-a-time", scoreOneAtATime},
	} {
		b.Run(fmt.Sprintf("impl=%s", impl.name), func(b *testing.B) {
			var sink float64
			for b.Loop() {
				sink += impl.score(s, z)
			}
			if math.IsNaN(sink) {
				b.Fatal("NaN score")
			}
		})
	}
}

package ovr

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
)

func randSparseRows(r *rand.Rand, n, d int) [][]float64 {
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = make([]float64, d)
		for range 3 {
			rows[i][r.IntN(d)] = r.NormFloat64()
		}
	}
	return rows
}

// TestSparseScoringMatchesDense checks that a sparse instance scores
// exactly as its dense form under every scorer shape (linear; rbf and
// poly with dense or sparse support vectors) and every sparsity-keeping
// scaler: the sparse sums skip only exact zeros, so any difference is a
// bug (a dropped term, a sign slip in the merged distance, a scaler that
// forgets the unit norm).
func TestSparseScoringMatchesDense(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	const d = 12
	rows := randSparseRows(r, 30, d)
	sv := randSparseRows(r, 4, d)
	w := make([]float64, d)
	for j := range w {
		w[j] = r.NormFloat64()
	}
	beta := []float64{0.5, -1, 2, -0.25}
	var ssv []mil.SparseVec
	for _, x := range sv {
		ssv = append(ssv, mil.SparseOf(x))
	}
	scorers := map[string]Scorer{
		"linear":         {W: w, B: 0.3},
		"rbf dense sv":   {SV: sv, Beta: beta, Gamma: 0.7, B: -0.1},
		"rbf sparse sv":  {SparseSV: ssv, Beta: beta, Gamma: 0.7, B: -0.1},
		"poly dense sv":  {SV: sv, Beta: beta, Gamma: 0.7, Kernel: KernelPoly, Degree: 3, Coef0: 1},
		"poly sparse sv": {SparseSV: ssv, Beta: beta, Gamma: 0.7, Kernel: KernelPoly, Degree: 3, Coef0: 1},
	}
	var sparseRows []mil.SparseVec
	for _, x := range rows {
		sparseRows = append(sparseRows, mil.SparseOf(x))
	}
	for _, mode := range SparseScalings {
		sd, err := FitScaler(mode, rows, d)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := FitScalerSparse(mode, sparseRows, d)
		if err != nil {
			t.Fatal(err)
		}
		if !ss.KeepsSparsity() {
			t.Fatalf("%s: scaler does not keep sparsity", mode)
		}
		for j := range sd.Scale {
			if sd.Scale[j] != ss.Scale[j] || sd.Mean[j] != ss.Mean[j] {
				t.Fatalf("%s feature %d: dense scaler %v/%v, sparse %v/%v", mode, j, sd.Mean[j], sd.Scale[j], ss.Mean[j], ss.Scale[j])
			}
		}
		for i, x := range rows {
			zd := sd.Apply(make([]float64, d), x)
			zs := ss.ApplySparse(sparseRows[i])
			dz := zs.Dense(d)
			for j := range zd {
				if zd[j] != dz[j] {
					t.Fatalf("%s row %d feature %d: dense %v, sparse %v", mode, i, j, zd[j], dz[j])
				}
			}
			for name, sc := range scorers {
				want := sc.Score(zd)
				if got := sc.ScoreSparse(zs); got != want {
					t.Fatalf("%s %s row %d: ScoreSparse %v, Score %v", mode, name, i, got, want)
				}
			}
		}
	}
}

// TestMaxAbsScale checks the max-abs scaler against its definition on
// dense rows: each feature divided by its largest magnitude, an all-zero
// feature left alone (catches a scale seeded at 1, which caps every
// feature's scale below at 1).
func TestMaxAbsScale(t *testing.T) {
	rows := [][]float64{{0.5, -4, 0}, {-0.25, 2, 0}}
	s, err := FitScaler(ScaleMaxAbs, rows, 3)
	if err != nil {
		t.Fatal(err)
	}
	for j, want := range []float64{0.5, 4, 1} {
		if s.Scale[j] != want || s.Mean[j] != 0 {
			t.Fatalf("feature %d: mean %v scale %v, want 0 and %v", j, s.Mean[j], s.Scale[j], want)
		}
	}
	z := s.Apply(make([]float64, 3), rows[0])
	if math.Abs(z[0]-1) > 0 || math.Abs(z[1]+1) > 0 || z[2] != 0 {
		t.Fatalf("scaled row %v, want [1 -1 0]", z)
	}
	if _, err := FitScalerSparse(ScaleZScore, nil, 3); err == nil {
		t.Fatal("z-score on sparse rows: no error")
	}
}

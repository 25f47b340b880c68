package lsa

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// TestBasisMatchesSVD holds the randomized basis to the exact SVD of the
// densified matrix (gonum's): on sparse matrices with a planted spectrum
// (a few strong directions over noise, as weighted passages have), the
// projector on the top-rank right singular vectors is the same, and a
// passage's coordinates agree up to the basis's sign and order freedom
// (compared through the projector), within float32 storage.
func TestBasisMatchesSVD(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n, d, r, rank int
	}{
		{"tall", 80, 30, 4, 4},
		{"wide", 40, 200, 5, 5},
		{"rank below the planted", 60, 120, 6, 3},
		{"rank above the data", 7, 50, 3, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			xs := plantedSparse(rng, tc.n, tc.d, tc.r)
			b, err := FitBasis(context.Background(), xs, tc.rank, rand.New(rand.NewPCG(3, 4)))
			if err != nil {
				t.Fatal(err)
			}
			a := mat.NewDense(tc.n, tc.d, nil)
			for i, x := range xs {
				for k, j := range x.Idx {
					a.Set(i, int(j), x.Val[k])
				}
			}
			var svd mat.SVD
			if !svd.Factorize(a, mat.SVDThin) {
				t.Fatal("exact SVD failed")
			}
			var v mat.Dense
			svd.VTo(&v)
			want := min(tc.rank, tc.n, tc.d)
			if tc.n < tc.rank {
				// Only n directions carry the data: the exact SVD's
				// beyond them are arbitrary, so compare the n.
				want = tc.n
			}
			if b.Rank != min(tc.rank, tc.n) {
				t.Fatalf("rank %d, want %d", b.Rank, min(tc.rank, tc.n))
			}
			// Basis as a d × rank matrix.
			got := mat.NewDense(tc.d, b.Rank, nil)
			for _, j := range b.Idx {
				got.SetRow(int(j), b.project(mil.SparseVec{Idx: []int32{j}, Val: []float64{1}}))
			}
			var pg, pw mat.Dense
			pg.Mul(got, got.T())
			vw := v.Slice(0, tc.d, 0, want)
			pw.Mul(vw, vw.T())
			var diff mat.Dense
			diff.Sub(&pg, &pw)
			// A wrong product or a lost direction differs by O(1); the
			// range finder's own error here is below 1e-4.
			if e := mat.Norm(&diff, 2); e > 1e-3 {
				t.Fatalf("projector differs from the exact SVD's by %.3g (spectral norm)", e)
			}
		})
	}
}

// plantedSparse draws n sparse rows of dimension d: r strong latent
// directions (singular values 100, 50, 25, ...) plus small noise, about a
// third of the entries zero.
func plantedSparse(rng *rand.Rand, n, d, r int) []mil.SparseVec {
	u := mat.NewDense(n, r, nil)
	v := mat.NewDense(r, d, nil)
	for i := range n {
		for c := range r {
			u.Set(i, c, rng.NormFloat64()*100/math.Pow(2, float64(c)))
		}
	}
	for c := range r {
		for j := range d {
			v.Set(c, j, rng.NormFloat64())
		}
	}
	var a mat.Dense
	a.Mul(u, v)
	xs := make([]mil.SparseVec, n)
	for i := range n {
		for j := range d {
			if rng.IntN(3) == 0 {
				continue
			}
			xs[i].Idx = append(xs[i].Idx, int32(j))
			xs[i].Val = append(xs[i].Val, a.At(i, j)+0.01*rng.NormFloat64())
		}
	}
	return xs
}

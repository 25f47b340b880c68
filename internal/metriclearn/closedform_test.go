package metriclearn

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// pinvSVD is the reference pseudo-inverse, straight from a thin SVD of X.
func pinvSVD(t *testing.T, x *mat.Dense) *mat.Dense {
	t.Helper()
	var svd mat.SVD
	if !svd.Factorize(x, mat.SVDThin) {
		t.Fatal("svd failed")
	}
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	s := svd.Values(nil)
	_, d := x.Dims()
	tol := float64(max(x.RawMatrix().Rows, d)) * 1e-12 * s[0]
	for j, sv := range s {
		f := 0.0
		if sv > tol {
			f = 1 / sv
		}
		for i := 0; i < d; i++ {
			v.Set(i, j, v.At(i, j)*f)
		}
	}
	var p mat.Dense
	p.Mul(&v, u.T())
	return &p
}

func randomData(rng *rand.Rand, n, d, k, rank int) (*mat.Dense, []int) {
	// rank-deficient when rank < d: X = A B with A n×rank, B rank×d.
	a := mat.NewDense(n, rank, nil)
	b := mat.NewDense(rank, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < rank; j++ {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	for i := 0; i < rank; i++ {
		for j := 0; j < d; j++ {
			b.Set(i, j, rng.NormFloat64())
		}
	}
	var x mat.Dense
	x.Mul(a, b)
	labels := make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(k)
	}
	return &x, labels
}

func TestTrainMatchesPinvTimesJ(t *testing.T) {
	cases := []struct {
		name          string
		n, d, k, rank int
	}{
		{"tall-full-rank", 60, 5, 3, 5},
		{"tall-rank-deficient", 60, 6, 4, 3},
		{"wide", 8, 12, 3, 8},
		{"one-cluster", 20, 4, 1, 4},
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x, labels := randomData(rng, tc.n, tc.d, tc.k, tc.rank)
			got, err := Train(x, labels, tc.k)
			if err != nil {
				t.Fatal(err)
			}
			q := make([]float64, tc.k)
			for _, l := range labels {
				q[l]++
			}
			j := mat.NewDense(tc.n, tc.k, nil)
			for i, l := range labels {
				j.Set(i, l, 1/math.Sqrt(q[l]))
			}
			var want mat.Dense
			want.Mul(pinvSVD(t, x), j)
			if !mat.EqualApprox(got, &want, 1e-7*mat.Norm(&want, 2)) {
				t.Fatalf("W differs from pinv(X) J:\n got %v\nwant %v", mat.Formatted(got), mat.Formatted(&want))
			}
		})
	}
}

func TestTrainEmptyClusterGivesZeroColumn(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 9))
	x, labels := randomData(rng, 30, 4, 2, 4) // labels in {0,1}; class 2 empty
	w, err := Train(x, labels, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if w.At(i, 2) != 0 {
			t.Fatalf("column of the empty cluster is not zero: %v", mat.Formatted(w))
		}
	}
	if _, err := Train(x, append(labels[:29:29], 5), 3); err == nil {
		t.Fatal("label outside 0..k-1 accepted")
	}
}

func TestWhitenerProjectIsOrthonormalBasis(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	x, _ := randomData(rng, 40, 6, 2, 4)
	w, err := NewWhitener(Gram(x), 40)
	if err != nil {
		t.Fatal(err)
	}
	if w.Rank() != 4 {
		t.Fatalf("rank %d, want 4", w.Rank())
	}
	u := w.Project(x)
	var utu mat.Dense
	utu.Mul(u.T(), u)
	if !mat.EqualApprox(&utu, eye(4), 1e-8) {
		t.Fatalf("UᵀU is not the identity: %v", mat.Formatted(&utu))
	}
	// U Uᵀ = X X†.
	var uut, xxp mat.Dense
	uut.Mul(u, u.T())
	xxp.Mul(x, pinvSVD(t, x))
	if !mat.EqualApprox(&uut, &xxp, 1e-7) {
		t.Fatal("U Uᵀ differs from X X†")
	}
}

func eye(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, 1)
	}
	return m
}

func TestTrainSetsEqualsTrainOnConcatenation(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	x, labels := randomData(rng, 90, 5, 3, 5)
	whole, err := Train(x, labels, 3)
	if err != nil {
		t.Fatal(err)
	}
	var sets []*mat.Dense
	var labs [][]int
	for _, cut := range [][2]int{{0, 10}, {10, 55}, {55, 90}} {
		sets = append(sets, mat.DenseCopyOf(x.Slice(cut[0], cut[1], 0, 5)))
		labs = append(labs, labels[cut[0]:cut[1]])
	}
	parts, err := TrainSets(sets, labs, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.EqualApprox(whole, parts, 1e-9*mat.Norm(whole, 2)) {
		t.Fatalf("TrainSets differs from Train on the stacked rows:\n%v\n%v", mat.Formatted(whole), mat.Formatted(parts))
	}
}

package metriclearn

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"gonum.org/v1/gonum/mat"
)

// randomSparse draws n sparse rows over dim features with about density·dim
// non-zeros each, and a class per row in 0..k-1.
func randomSparse(rng *rand.Rand, n, dim, k int, density float64) ([]mil.SparseVec, []int) {
	xs := make([]mil.SparseVec, n)
	labels := make([]int, n)
	for i := range xs {
		for j := range dim {
			if rng.Float64() < density {
				xs[i].Idx = append(xs[i].Idx, int32(j))
				xs[i].Val = append(xs[i].Val, rng.NormFloat64())
			}
		}
		labels[i] = rng.IntN(k)
	}
	return xs, labels
}

func densify(x mil.SparseVec, dim int) []float64 {
	out := make([]float64, dim)
	for i, j := range x.Idx {
		out[j] = x.Val[i]
	}
	return out
}

// TestTrainSparseMatchesDenseRidge holds the conjugate-gradient solve on
// sparse rows to the dense ridge closed form (TrainRidge on the centred,
// densified selected rows, through the Gram eigendecomposition): the same
// projection of held-out rows, with fewer rows than features (passages)
// and more, centred or not.
func TestTrainSparseMatchesDenseRidge(t *testing.T) {
	cases := []struct {
		name         string
		n, dim, k    int
		ridge        float64
		center       bool
		selectEveryN int
	}{
		{"wide-centred", 30, 80, 3, 1, true, 1},
		{"wide-raw", 30, 80, 3, 0.1, false, 1},
		{"tall-centred-subset", 120, 25, 4, 0.5, true, 2},
		{"small-ridge", 40, 60, 2, 1e-3, true, 3},
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			xs, all := randomSparse(rng, tc.n, tc.dim, tc.k, 0.15)
			var sel, labels []int
			for j := 0; j < tc.n; j += tc.selectEveryN {
				sel, labels = append(sel, j), append(labels, all[j])
			}
			p, err := TrainSparse(context.Background(), xs, sel, labels, tc.k, tc.dim, tc.ridge, tc.center)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.validate(); err != nil {
				t.Fatal(err)
			}
			// Dense reference.
			mu := make([]float64, tc.dim)
			if tc.center {
				for _, x := range xs {
					for i, j := range x.Idx {
						mu[j] += x.Val[i] / float64(tc.n)
					}
				}
			}
			xsel := mat.NewDense(len(sel), tc.dim, nil)
			for r, j := range sel {
				row := densify(xs[j], tc.dim)
				for c := range row {
					row[c] -= mu[c]
				}
				xsel.SetRow(r, row)
			}
			w, err := TrainRidge(xsel, labels, tc.k, tc.ridge)
			if err != nil {
				t.Fatal(err)
			}
			test, _ := randomSparse(rng, 10, tc.dim, tc.k, 0.15)
			got := make([]float64, tc.k)
			for _, x := range test {
				p.applySparse(x, got, nil)
				d := densify(x, tc.dim)
				for c := range d {
					d[c] -= mu[c]
				}
				var want mat.VecDense
				want.MulVec(w.T(), mat.NewVecDense(tc.dim, d))
				scale := mat.Norm(&want, 2)
				for c := range got {
					if math.Abs(got[c]-want.AtVec(c)) > 1e-6*scale {
						t.Fatalf("g(x)[%d] = %.9g, dense ridge closed form %.9g", c, got[c], want.AtVec(c))
					}
				}
				// The dense apply of the same projection agrees too.
				dense := make([]float64, tc.k)
				p.apply(densify(x, tc.dim), dense, nil)
				for c := range got {
					if math.Abs(got[c]-dense[c]) > 1e-12*(1+scale) {
						t.Fatalf("applySparse %v, apply %v", got, dense)
					}
				}
			}
		})
	}
}

// TestTrainRidgeZeroIsTrain: ridge 0 is the paper's pseudo-inverse.
func TestTrainRidgeZeroIsTrain(t *testing.T) {
	x, labels := randomData(rand.New(rand.NewPCG(3, 3)), 40, 6, 3, 6)
	a, err := Train(x, labels, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := TrainRidge(x, labels, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(a, b) {
		t.Fatal("TrainRidge(0) differs from Train")
	}
}

func TestTrainSparseRefusals(t *testing.T) {
	xs, labels := randomSparse(rand.New(rand.NewPCG(5, 5)), 10, 20, 2, 0.3)
	sel := []int{0, 1, 2}
	cases := []struct {
		name   string
		sel    []int
		labels []int
		ridge  float64
		want   error
	}{
		{"no ridge", sel, labels[:3], 0, ErrNeedsRidge},
		{"NaN ridge", sel, labels[:3], math.NaN(), ErrNeedsRidge},
		{"no rows", nil, nil, 1, ErrNoData},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := TrainSparse(context.Background(), xs, tc.sel, tc.labels, 2, 20, tc.ridge, true)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := TrainSparse(context.Background(), xs, sel, []int{0, 5, 1}, 2, 20, 1, true); err == nil {
		t.Fatal("label outside 0..k-1 accepted")
	}
}

// TestProjectionRowsValidate: a decoded map with rows out of order, out of
// range or under a kernel is refused, so a corrupt model fails at decode,
// not as a wrong annotation.
func TestProjectionRowsValidate(t *testing.T) {
	ok := Projection{Kernel: KernelLinear, InDim: 10, OutDim: 1, Rows: []int32{2, 7}, Map: [][]float64{{1}, {2}}}
	if err := ok.validate(); err != nil {
		t.Fatal(err)
	}
	blob, err := json.Marshal(ok)
	if err != nil {
		t.Fatal(err)
	}
	var back Projection
	if err := json.Unmarshal(blob, &back); err != nil || back.validate() != nil {
		t.Fatalf("round trip: %v %v", err, back.validate())
	}
	bad := map[string]func(p *Projection){
		"unsorted":     func(p *Projection) { p.Rows = []int32{7, 2} },
		"repeated":     func(p *Projection) { p.Rows = []int32{2, 2} },
		"out of range": func(p *Projection) { p.Rows = []int32{2, 10} },
		"negative":     func(p *Projection) { p.Rows = []int32{-1, 2} },
		"short map":    func(p *Projection) { p.Map = p.Map[:1] },
		"kernel": func(p *Projection) {
			p.Kernel, p.Gamma, p.Landmarks = KernelRBF, 1, [][]float64{make([]float64, 10)}
		},
	}
	for name, mutate := range bad {
		p := ok
		p.Rows, p.Map = append([]int32(nil), ok.Rows...), append([][]float64(nil), ok.Map...)
		mutate(&p)
		if p.validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

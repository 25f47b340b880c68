package mil

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSparseVecOps checks every SparseVec operation against the same
// computation on the dense rows (catches a merge that skips or double
// counts matching indices, or a scatter to the wrong position).
func TestSparseVecOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const dim = 40
	randDense := func() []float64 {
		x := make([]float64, dim)
		for j := range x {
			if rng.IntN(4) == 0 {
				x[j] = rng.NormFloat64()
			}
		}
		return x
	}
	for range 200 {
		a, b := randDense(), randDense()
		sa, sb := SparseOf(a), SparseOf(b)
		var dot, sq float64
		for j := range a {
			dot += a[j] * b[j]
			sq += a[j] * a[j]
		}
		if got := sa.DotSparse(sb); math.Abs(got-dot) > 1e-12 {
			t.Fatalf("DotSparse = %v, want %v", got, dot)
		}
		if got := sa.Dot(b); math.Abs(got-dot) > 1e-12 {
			t.Fatalf("Dot = %v, want %v", got, dot)
		}
		if got := sa.SqNorm(); math.Abs(got-sq) > 1e-12 {
			t.Fatalf("SqNorm = %v, want %v", got, sq)
		}
		d := sa.Dense(dim)
		for j := range a {
			if d[j] != a[j] {
				t.Fatalf("Dense[%d] = %v, want %v", j, d[j], a[j])
			}
		}
		acc := make([]float64, dim)
		copy(acc, b)
		sa.AddTo(acc, 2)
		for j := range acc {
			if want := b[j] + 2*a[j]; acc[j] != want {
				t.Fatalf("AddTo[%d] = %v, want %v", j, acc[j], want)
			}
		}
		if err := sa.Validate(dim); err != nil {
			t.Fatal(err)
		}
	}
}

// TestValidateSparse covers the sparse branch of Bag.Validate: each case
// names the malformed instance it must refuse.
func TestValidateSparse(t *testing.T) {
	ok := []SparseVec{{Idx: []int32{0, 3}, Val: []float64{1, 2}}, {}}
	tests := []struct {
		name string
		bag  Bag
		want error
	}{
		{name: "valid, with an all-zero instance", bag: Bag{ID: "a", Sparse: ok, Labels: []int{0}}},
		{name: "empty", bag: Bag{ID: "a", Sparse: []SparseVec{}}, want: ErrEmptyBag},
		{name: "both forms", bag: Bag{ID: "a", Sparse: ok, Instances: [][]float64{{1, 2, 3, 4}}}, want: ErrSparse},
		{name: "index out of range", bag: Bag{ID: "a", Sparse: []SparseVec{{Idx: []int32{4}, Val: []float64{1}}}}, want: ErrDimension},
		{name: "negative index", bag: Bag{ID: "a", Sparse: []SparseVec{{Idx: []int32{-1}, Val: []float64{1}}}}, want: ErrDimension},
		{name: "unsorted", bag: Bag{ID: "a", Sparse: []SparseVec{{Idx: []int32{2, 1}, Val: []float64{1, 1}}}}, want: ErrSparse},
		{name: "duplicate index", bag: Bag{ID: "a", Sparse: []SparseVec{{Idx: []int32{1, 1}, Val: []float64{1, 1}}}}, want: ErrSparse},
		{name: "ragged", bag: Bag{ID: "a", Sparse: []SparseVec{{Idx: []int32{1}, Val: []float64{1, 1}}}}, want: ErrSparse},
		{name: "nan", bag: Bag{ID: "a", Sparse: []SparseVec{{Idx: []int32{1}, Val: []float64{math.NaN()}}}}, want: ErrNonFinite},
		{name: "instance labels short", bag: Bag{ID: "a", Sparse: ok, InstanceLabels: []int{0}}, want: ErrInstanceMeta},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.bag.Validate(4, 1)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestDensified checks the dense copy of a mixed dataset (catches a
// conversion that drops a bag's labels or leaves Sparse set) and that the
// counts read either form.
func TestDensified(t *testing.T) {
	d := &Dataset{Name: "m", Classes: []string{"p"}, Dim: 3, Bags: []Bag{
		{ID: "s", Sparse: []SparseVec{{Idx: []int32{2}, Val: []float64{5}}, {}}, Labels: []int{0}, InstanceLabels: []int{0, Unlabeled}},
		{ID: "d", Instances: [][]float64{{1, 0, 0}}, Labels: []int{}},
	}}
	if !d.IsSparse() || d.NumInstances() != 3 || d.NonZeros() != 2 {
		t.Fatalf("IsSparse %v NumInstances %d NonZeros %d, want true 3 2", d.IsSparse(), d.NumInstances(), d.NonZeros())
	}
	dd := d.Densified()
	if dd.IsSparse() || dd.NumInstances() != 3 {
		t.Fatalf("densified: IsSparse %v NumInstances %d", dd.IsSparse(), dd.NumInstances())
	}
	b := dd.Bags[0]
	if b.Sparse != nil || len(b.Instances) != 2 || b.Instances[0][2] != 5 || b.Instances[1][0] != 0 || len(b.Labels) != 1 || len(b.InstanceLabels) != 2 {
		t.Fatalf("densified bag %+v", b)
	}
	if err := b.Validate(3, 1); err != nil {
		t.Fatal(err)
	}
	if d.Bags[0].Sparse == nil {
		t.Fatal("Densified modified its receiver")
	}
	if dd.Densified() != dd {
		t.Fatal("Densified of a dense dataset should return it")
	}
}

func TestSeenFeatures(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []SparseVec
		want []int32
	}{
		{"none", nil, []int32{}},
		{"union ascending", []SparseVec{{Idx: []int32{7, 9}, Val: []float64{1, 2}}, {Idx: []int32{2, 9}, Val: []float64{3, 4}}}, []int32{2, 7, 9}},
		{"explicit zeros left out", []SparseVec{{Idx: []int32{1, 4}, Val: []float64{0, 5}}}, []int32{4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx, col := SeenFeatures(tc.xs)
			if !slices.Equal(idx, tc.want) || len(col) != len(idx) {
				t.Fatalf("SeenFeatures = %v (%d columns), want %v", idx, len(col), tc.want)
			}
			for c, j := range idx {
				if col[j] != c {
					t.Fatalf("col[%d] = %d, want %d", j, col[j], c)
				}
			}
		})
	}
}

package mil

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// SparseVec is one instance in compressed form: the features at Idx (0-based,
// strictly ascending) have the values Val, every other feature is 0. Text
// instances (a bag of words over tens of thousands of terms) have a few
// dozen non-zeros, so a dense row would cost thousands of times the memory
// and the time of every dot product.
type SparseVec struct {
	Idx []int32   `json:"idx"`
	Val []float64 `json:"val"`
}

// SeenFeatures returns the features some x has a non-zero value for,
// ascending, and the column of each in that list: what a dense matrix over
// the seen features only (a few tens of thousands of text's 2^17) indexes
// its columns by.
func SeenFeatures(xs []SparseVec) (idx []int32, col map[int32]int) {
	col = map[int32]int{}
	for _, x := range xs {
		for k, j := range x.Idx {
			if x.Val[k] != 0 {
				col[j] = 0
			}
		}
	}
	idx = make([]int32, 0, len(col))
	for j := range col {
		idx = append(idx, j)
	}
	slices.Sort(idx)
	for c, j := range idx {
		col[j] = c
	}
	return idx, col
}

// ErrSparse marks a malformed sparse instance (index order, range or
// Idx/Val length mismatch).
var ErrSparse = errors.New("malformed sparse instance")

// Len is the number of stored entries.
func (v SparseVec) Len() int { return len(v.Idx) }

// Dot returns ⟨v, w⟩ for a dense w with len(w) above every index of v.
func (v SparseVec) Dot(w []float64) float64 {
	s := 0.0
	for k, j := range v.Idx {
		s += v.Val[k] * w[j]
	}
	return s
}

// DotSparse returns ⟨v, u⟩ by merging the two index lists.
func (v SparseVec) DotSparse(u SparseVec) float64 {
	s := 0.0
	a, b := 0, 0
	for a < len(v.Idx) && b < len(u.Idx) {
		switch {
		case v.Idx[a] < u.Idx[b]:
			a++
		case v.Idx[a] > u.Idx[b]:
			b++
		default:
			s += v.Val[a] * u.Val[b]
			a++
			b++
		}
	}
	return s
}

// SqNorm returns ‖v‖².
func (v SparseVec) SqNorm() float64 {
	s := 0.0
	for _, x := range v.Val {
		s += x * x
	}
	return s
}

// AddTo adds f·v to the dense dst.
func (v SparseVec) AddTo(dst []float64, f float64) {
	for k, j := range v.Idx {
		dst[j] += f * v.Val[k]
	}
}

// Dense returns v as a dense vector of dimension dim (which must exceed
// every index).
func (v SparseVec) Dense(dim int) []float64 {
	x := make([]float64, dim)
	for k, j := range v.Idx {
		x[j] = v.Val[k]
	}
	return x
}

// Clone returns a deep copy of v.
func (v SparseVec) Clone() SparseVec {
	return SparseVec{Idx: append([]int32(nil), v.Idx...), Val: append([]float64(nil), v.Val...)}
}

// SparseOf returns the non-zero entries of the dense x.
func SparseOf(x []float64) SparseVec {
	var v SparseVec
	for j, f := range x {
		if f != 0 {
			v.Idx = append(v.Idx, int32(j))
			v.Val = append(v.Val, f)
		}
	}
	return v
}

// Validate checks the index order and range (dim <= 0 skips the range
// check) and that every value is finite.
func (v SparseVec) Validate(dim int) error {
	if len(v.Idx) != len(v.Val) {
		return fmt.Errorf("%w: %d indices and %d values", ErrSparse, len(v.Idx), len(v.Val))
	}
	for k, j := range v.Idx {
		if j < 0 || (dim > 0 && int(j) >= dim) {
			return fmt.Errorf("%w: index %d outside [0, %d)", ErrDimension, j, dim)
		}
		if k > 0 && j <= v.Idx[k-1] {
			return fmt.Errorf("%w: indices not strictly ascending (%d after %d)", ErrSparse, j, v.Idx[k-1])
		}
		if f := v.Val[k]; math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("feature %d: %w", j, ErrNonFinite)
		}
	}
	return nil
}

// IsSparse reports whether the bag holds its instances in Sparse form.
func (b *Bag) IsSparse() bool { return b.Sparse != nil }

// Len returns the number of instances, in whichever form the bag holds them.
func (b *Bag) Len() int {
	if b.Sparse != nil {
		return len(b.Sparse)
	}
	return len(b.Instances)
}

// DenseInstances returns the instances as dense rows of dimension dim: the
// Instances themselves for a dense bag, fresh rows for a sparse one.
func (b *Bag) DenseInstances(dim int) [][]float64 {
	if b.Sparse == nil {
		return b.Instances
	}
	out := make([][]float64, len(b.Sparse))
	for i, v := range b.Sparse {
		out[i] = v.Dense(dim)
	}
	return out
}

// IsSparse reports whether any bag of d holds sparse instances.
func (d *Dataset) IsSparse() bool {
	for i := range d.Bags {
		if d.Bags[i].Sparse != nil {
			return true
		}
	}
	return false
}

// Densified returns d with every sparse bag converted to dense rows, for
// the consumers that only read Instances (the dense file writers, the models
// without a sparse path). Dense bags and the returned dataset share
// storage with d; d itself is returned when it has no sparse bag.
func (d *Dataset) Densified() *Dataset {
	if !d.IsSparse() {
		return d
	}
	out := &Dataset{Name: d.Name, Classes: d.Classes, Dim: d.Dim, Bags: make([]Bag, len(d.Bags))}
	for i, b := range d.Bags {
		if b.Sparse != nil {
			b.Instances, b.Sparse = b.DenseInstances(d.Dim), nil
		}
		out.Bags[i] = b
	}
	return out
}

// NonZeros returns the number of stored entries of the sparse bags plus the
// non-zero values of the dense ones: what a sparse representation of d
// costs.
func (d *Dataset) NonZeros() int {
	n := 0
	for i := range d.Bags {
		b := &d.Bags[i]
		for _, v := range b.Sparse {
			n += len(v.Idx)
		}
		for _, x := range b.Instances {
			for _, f := range x {
				if f != 0 {
					n++
				}
			}
		}
	}
	return n
}

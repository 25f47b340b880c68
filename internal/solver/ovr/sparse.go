package ovr

import (
	"fmt"
	"math"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// Sparse instances. A scaler whose Mean is zero (none, unit, maxabs) maps a
// sparse instance to a sparse one, so a model trained on text never holds a
// dense row; the other modes centre the features and would fill every
// zero, so they are refused for sparse training data (a model trained on
// dense data still scores a sparse bag, densifying one instance at a time).
//
// Every sparse computation here adds the same non-zero terms in the same
// (ascending index) order as its dense counterpart, and the terms it skips
// are exact zeros, so the results are bit-identical: a sparse and a dense
// model score the same instance alike.

// SparseScalings are the modes that keep zeros zero.
var SparseScalings = []Scaling{ScaleMaxAbs, ScaleUnit, ScaleNone}

// fixMaxAbs gives an all-zero feature scale 1.
func fixMaxAbs(s *Scaler) {
	for j, v := range s.Scale {
		if !(v > 1e-300) {
			s.Scale[j] = 1
		}
	}
}

// FitScalerSparse is FitScaler on sparse rows, for the modes that keep
// sparsity (SparseScalings); any other mode is an error.
func FitScalerSparse(mode Scaling, rows []mil.SparseVec, dim int) (Scaler, error) {
	mode, err := ParseScaling(string(mode))
	if err != nil {
		return Scaler{}, err
	}
	switch mode {
	case ScaleMaxAbs, ScaleUnit, ScaleNone:
	default:
		return Scaler{}, fmt.Errorf("%w: scale=%s centres the features and would densify sparse data (want maxabs, unit or none)",
			models.ErrDenseOnly, mode)
	}
	s := Scaler{Mode: mode, Mean: make([]float64, dim), Scale: make([]float64, dim)}
	for j := range s.Scale {
		s.Scale[j] = 1
	}
	if mode == ScaleMaxAbs {
		for j := range s.Scale {
			s.Scale[j] = 0
		}
		for _, x := range rows {
			for k, j := range x.Idx {
				s.Scale[j] = math.Max(s.Scale[j], math.Abs(x.Val[k]))
			}
		}
		fixMaxAbs(&s)
	}
	return s, nil
}

// KeepsSparsity reports whether Apply maps zero to zero (Mean all zero).
func (s Scaler) KeepsSparsity() bool {
	for _, m := range s.Mean {
		if m != 0 {
			return false
		}
	}
	return true
}

// ApplySparse returns the transformed x for a scaler that KeepsSparsity
// (the caller checks). The result is a new vector.
func (s Scaler) ApplySparse(x mil.SparseVec) mil.SparseVec {
	out := mil.SparseVec{Idx: x.Idx, Val: make([]float64, len(x.Val))}
	for k, j := range x.Idx {
		out.Val[k] = (x.Val[k] - s.Mean[j]) / s.Scale[j]
	}
	if s.Mode.unitNorm() {
		n := 0.0
		for _, v := range out.Val {
			n += v * v
		}
		if n > 0 {
			n = 1 / math.Sqrt(n)
			for k := range out.Val {
				out.Val[k] *= n
			}
		}
	}
	return out
}

// PrepareSparse is Prepare for sparse training data: Data.Sparse holds the
// transformed instances (Rows is nil). Dense bags of a mixed set are
// compressed. mode must keep sparsity (see FitScalerSparse).
func PrepareSparse(train *mil.Dataset, mode Scaling) (*Data, error) {
	if train == nil || train.Dim <= 0 {
		return nil, fmt.Errorf("%w: dataset has no dimension", models.ErrBadInput)
	}
	if len(train.Classes) == 0 {
		return nil, fmt.Errorf("%w: dataset has no classes", models.ErrBadInput)
	}
	d := &Data{}
	var raw []mil.SparseVec
	for i := range train.Bags {
		b := &train.Bags[i]
		if err := b.Validate(train.Dim, len(train.Classes)); err != nil {
			return nil, fmt.Errorf("%w: %w", models.ErrBadInput, err)
		}
		if !b.Labeled() {
			continue
		}
		ids := make([]int, b.Len())
		for j := range ids {
			ids[j] = len(raw)
			if b.Sparse != nil {
				raw = append(raw, b.Sparse[j])
			} else {
				raw = append(raw, mil.SparseOf(b.Instances[j]))
			}
		}
		d.Bags = append(d.Bags, ids)
		d.Labels = append(d.Labels, b.Labels)
		d.BagIndex = append(d.BagIndex, i)
	}
	if len(d.Bags) == 0 {
		return nil, fmt.Errorf("%w: no labeled bag to train on", models.ErrBadInput)
	}
	var err error
	if d.Scaler, err = FitScalerSparse(mode, raw, train.Dim); err != nil {
		return nil, err
	}
	d.Sparse = make([]mil.SparseVec, len(raw))
	for i, x := range raw {
		d.Sparse[i] = d.Scaler.ApplySparse(x)
	}
	return d, nil
}

// ScoreSparse is Score of a sparse standardised instance.
func (s *Scorer) ScoreSparse(z mil.SparseVec) float64 {
	v := s.B
	if s.W != nil {
		for k, j := range z.Idx {
			v += s.W[j] * z.Val[k]
		}
		return v
	}
	poly := s.Kernel == KernelPoly
	if s.SparseSV != nil {
		for u, sv := range s.SparseSV {
			if poly {
				v += s.Beta[u] * math.Pow(s.Gamma*sv.DotSparse(z)+s.Coef0, float64(s.Degree))
			} else {
				v += s.Beta[u] * math.Exp(-s.Gamma*SqDistSparse(sv, z))
			}
		}
		return v
	}
	for u, sv := range s.SV {
		if poly {
			v += s.Beta[u] * math.Pow(s.Gamma*z.Dot(sv)+s.Coef0, float64(s.Degree))
		} else {
			v += s.Beta[u] * math.Exp(-s.Gamma*SqDistDenseSparse(sv, z))
		}
	}
	return v
}

// scoreSparseSV is Score of a dense instance by a scorer with sparse
// support vectors.
func (s *Scorer) scoreSparseSV(z []float64) float64 {
	v := s.B
	for u, sv := range s.SparseSV {
		if s.Kernel == KernelPoly {
			v += s.Beta[u] * math.Pow(s.Gamma*sv.Dot(z)+s.Coef0, float64(s.Degree))
		} else {
			v += s.Beta[u] * math.Exp(-s.Gamma*SqDistDenseSparse(z, sv))
		}
	}
	return v
}

// SqDistSparse returns ‖a − b‖², summing (a_j − b_j)² over the union of
// the two index lists in ascending order: the dense sum without its zero
// terms, hence bit-identical to it (not ‖a‖² + ‖b‖² − 2⟨a, b⟩, which
// rounds differently and cancels badly for near neighbours).
func SqDistSparse(a, b mil.SparseVec) float64 {
	d := 0.0
	p, q := 0, 0
	for p < len(a.Idx) || q < len(b.Idx) {
		var e float64
		switch {
		case q == len(b.Idx) || (p < len(a.Idx) && a.Idx[p] < b.Idx[q]):
			e = a.Val[p]
			p++
		case p == len(a.Idx) || b.Idx[q] < a.Idx[p]:
			e = -b.Val[q]
			q++
		default:
			e = a.Val[p] - b.Val[q]
			p++
			q++
		}
		d += e * e
	}
	return d
}

// SqDistDenseSparse returns ‖x − z‖² for a dense x and a sparse z, in the
// dense order.
func SqDistDenseSparse(x []float64, z mil.SparseVec) float64 {
	d, k := 0.0, 0
	for j, xv := range x {
		e := xv
		if k < len(z.Idx) && int(z.Idx[k]) == j {
			e -= z.Val[k]
			k++
		}
		d += e * e
	}
	return d
}

func (s *Scorer) validateSparseSV(dim int) error {
	if s.SV != nil {
		return fmt.Errorf("kernel scorer has both dense and sparse support vectors")
	}
	if len(s.SparseSV) != len(s.Beta) {
		return fmt.Errorf("kernel scorer has %d support vectors and %d coefficients", len(s.SparseSV), len(s.Beta))
	}
	for u, sv := range s.SparseSV {
		if err := sv.Validate(dim); err != nil {
			return fmt.Errorf("support vector %d: %w", u, err)
		}
	}
	return nil
}

// instanceScoresSparse is InstanceScores of a sparse bag.
func (m *Model) instanceScoresSparse(b *mil.Bag) [][]float64 {
	keep := m.st.Scaler.KeepsSparsity()
	var dz []float64
	if !keep {
		dz = make([]float64, m.meta.Dim)
	}
	out := make([][]float64, len(b.Sparse))
	for i, x := range b.Sparse {
		row := make([]float64, len(m.st.Scorers))
		if keep {
			z := m.st.Scaler.ApplySparse(x)
			for c := range m.st.Scorers {
				row[c] = m.st.Scorers[c].ScoreSparse(z)
			}
		} else {
			// A centring scaler fills the zeros: densify this one
			// instance.
			dz = m.st.Scaler.Apply(dz, x.Dense(m.meta.Dim))
			for c := range m.st.Scorers {
				row[c] = m.st.Scorers[c].Score(dz)
			}
		}
		out[i] = row
	}
	return out
}

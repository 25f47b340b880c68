package orlr

import (
	"fmt"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// Sparse training data (mil.Bag.Sparse: text bags) with kernel=linear keeps
// its design matrix sparse (softmax.NewSparseProblem): the E-step logits
// and the M-step's objective and gradient cost the non-zeros, and scale
// defaults to unit norm (the z-score would fill every zero; maxabs and
// none also keep sparsity, the centring modes are refused), and l2 is
// chosen by inner cross-validation on the training bags unless given
// (select=cv, see selectL2: the dense default 2e-3 predicts one class for
// nearly every TREC9 bag). kernel=rbf
// maps every instance to a dense dictionary feature vector anyway, so its
// data are densified first. Annotate scores a sparse bag over its
// non-zeros under the linear model (scoresSparse) and densifies it only
// for the RBF one.
// TestSparseMatchesDense holds the sparse path to the dense one.

// appendSparse appends the instances of b to rows in sparse form (a dense
// bag of a mixed set is compressed).
func appendSparse(rows []mil.SparseVec, b *mil.Bag) []mil.SparseVec {
	if b.Sparse != nil {
		return append(rows, b.Sparse...)
	}
	for _, x := range b.Instances {
		rows = append(rows, mil.SparseOf(x))
	}
	return rows
}

// fitScalerSparse is fitScaler on sparse rows.
func fitScalerSparse(mode string, xs []mil.SparseVec, dim int) (*ovr.Scaler, error) {
	if mode == string(ovr.ScaleNone) {
		return nil, nil
	}
	sc, err := ovr.FitScalerSparse(ovr.Scaling(mode), xs, dim)
	if err != nil {
		return nil, fmt.Errorf("orlr: %w", err)
	}
	return &sc, nil
}

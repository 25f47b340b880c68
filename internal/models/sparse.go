package models

import "github.com/mimlstream/mimlstream/internal/mil"

// DataFor returns the training data k's Fit can take: data itself when it
// is dense or k has a sparse path (Kind.Sparse), a densified copy
// otherwise, so that every kind trains on a sparse file, the ones without a
// sparse path at the cost of dim × instances memory.
func (k Kind) DataFor(data *mil.Dataset) *mil.Dataset {
	if k.Sparse {
		return data
	}
	return data.Densified()
}

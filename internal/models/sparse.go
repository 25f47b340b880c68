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

// BagFor returns b as k's models can annotate it: b itself when it is
// dense or k has a sparse path (Kind.Sparse), else a densified copy of
// dimension dim (b's other slices shared). Annotate of a kind without a
// sparse path reads Instances only: a sparse bag would look empty to it.
func (k Kind) BagFor(b *mil.Bag, dim int) *mil.Bag {
	if k.Sparse || !b.IsSparse() {
		return b
	}
	d := *b
	d.Instances, d.Sparse = b.DenseInstances(dim), nil
	return &d
}

// BagFor is Kind.BagFor for the kind named kind; a kind r does not hold
// gets the dense copy, which every model reads.
func (r *Registry) BagFor(kind string, b *mil.Bag, dim int) *mil.Bag {
	k, err := r.Lookup(kind)
	if err != nil {
		k = Kind{}
	}
	return k.BagFor(b, dim)
}

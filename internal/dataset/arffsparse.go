package dataset

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// Sparse instances in a relational ARFF bag. Weka writes a sparse
// instance as {index value, index value, ...} with 0-based attribute
// indices and absent values 0; inside a relational value each instance is
// one such row. A bag with at least one sparse row loads as a sparse bag
// (mil.Bag.Sparse), its dense rows, if any, compressed, so a text set
// stays proportional to its non-zeros.

// sparseRows reports whether any instance row of a bag is in sparse form.
func sparseRows(rows []string) bool {
	for _, r := range rows {
		if r = strings.TrimSpace(r); r != "" && r[0] == '{' {
			return true
		}
	}
	return false
}

// readSparseInstances parses the instance rows of one bag, sparse or
// dense, of dimension dim, into sparse vectors. Errors name the instance.
func readSparseInstances(rows []string, dim int) ([]mil.SparseVec, error) {
	var out []mil.SparseVec
	for _, row := range rows {
		row = strings.TrimSpace(row)
		if row == "" {
			continue
		}
		k := len(out) + 1
		if row[0] != '{' {
			vals := strings.Split(row, ",")
			if len(vals) != dim {
				return nil, fmt.Errorf("instance %d has %d values, want %d", k, len(vals), dim)
			}
			x := make([]float64, dim)
			for j, s := range vals {
				v, err := parseFeature(s)
				if err != nil {
					return nil, fmt.Errorf("instance %d: %v", k, err)
				}
				x[j] = v
			}
			out = append(out, mil.SparseOf(x))
			continue
		}
		v, err := parseARFFSparse(row, dim)
		if err != nil {
			return nil, fmt.Errorf("instance %d: %v", k, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseARFFSparse parses one {index value, ...} row with 0-based indices
// below dim; pairs may come in any order, an index given twice is an
// error, explicit zeros are dropped.
func parseARFFSparse(row string, dim int) (mil.SparseVec, error) {
	if !strings.HasSuffix(row, "}") {
		return mil.SparseVec{}, fmt.Errorf("sparse row %q has no closing brace", row)
	}
	body := strings.TrimSpace(row[1 : len(row)-1])
	var v mil.SparseVec
	if body == "" {
		return v, nil
	}
	for _, pair := range strings.Split(body, ",") {
		is, vs, ok := strings.Cut(strings.TrimSpace(pair), " ")
		if !ok {
			return mil.SparseVec{}, fmt.Errorf("sparse pair %q is not \"index value\"", pair)
		}
		j, err := strconv.Atoi(strings.TrimSpace(is))
		if err != nil || j < 0 || j >= dim {
			return mil.SparseVec{}, fmt.Errorf("sparse index %q outside [0, %d)", is, dim)
		}
		x, err := parseFeature(vs)
		if err != nil {
			return mil.SparseVec{}, err
		}
		v.Idx = append(v.Idx, int32(j))
		v.Val = append(v.Val, x)
	}
	perm := make([]int, len(v.Idx))
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(a, b int) int { return cmp.Compare(v.Idx[a], v.Idx[b]) })
	var s mil.SparseVec
	for i, p := range perm {
		if i > 0 && v.Idx[p] == v.Idx[perm[i-1]] {
			return mil.SparseVec{}, fmt.Errorf("sparse index %d given twice", v.Idx[p])
		}
		if v.Val[p] != 0 {
			s.Idx = append(s.Idx, v.Idx[p])
			s.Val = append(s.Val, v.Val[p])
		}
	}
	return s, nil
}

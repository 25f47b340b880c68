package dataset

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// maxLine bounds one line of a text format; the longest real line (a Weka
// relational bag or a C4.5 attribute list) is a few hundred kilobytes.
const maxLine = 64 << 20

func newLineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	return sc
}

// textLoad opens path and hands it to read, prefixing errors with the path.
func textLoad(path string, read func(r io.Reader, name string) (*mil.Dataset, error)) (*mil.Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := read(bufio.NewReaderSize(f, 1<<20), datasetName(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// lineError reports a problem at a 1-based line.
func lineError(line int, format string, args ...any) error {
	return fmt.Errorf("line %d: %w: %s", line, ErrFormat, fmt.Sprintf(format, args...))
}

// parseFeature parses one finite feature value.
func parseFeature(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("feature %q is not a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("feature %q is not finite", s)
	}
	return v, nil
}

// bagGrouper gathers instances into bags by name, in order of first
// appearance, so that a file whose bags are not contiguous still loads.
type bagGrouper struct {
	index map[string]int
	bags  []mil.Bag
}

// bag returns the index in g.bags of the bag called name, adding it if new.
// Callers keep indices, not pointers: appending may move the slice.
func (g *bagGrouper) bag(name string) int {
	if g.index == nil {
		g.index = make(map[string]int)
	}
	i, ok := g.index[name]
	if !ok {
		i = len(g.bags)
		g.index[name] = i
		g.bags = append(g.bags, mil.Bag{ID: name, Labels: []int{}})
	}
	return i
}

// ReadMILL reads the MILL text format, one instance per line:
// instance_name,bag_name,label,features... where the features are either D
// dense values or sparse 1-based index:value pairs. The label is 0/1 per
// instance; the bag is positive when any of its instances is. A sparse
// file gives sparse bags (mil.Bag.Sparse), in memory proportional to its
// non-zeros; mil.Dataset.Densified converts them. dim > 0 fixes
// the dimension of a sparse file (an index above it is an error); dim <= 0
// takes it from the data.
func ReadMILL(r io.Reader, name string, dim int) (*mil.Dataset, error) {
	const (
		unknown = iota
		dense
		sparse
	)
	var (
		g      bagGrouper
		layout = unknown
		maxIdx int
		ln     int
	)
	sc := newLineScanner(r)
	for sc.Scan() {
		ln++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 3 {
			return nil, lineError(ln, "%d fields, want instance,bag,label,features...", len(f))
		}
		feats := f[3:]
		if len(feats) == 1 && strings.TrimSpace(feats[0]) == "" {
			feats = nil // a trailing comma and nothing else
		}
		lab, err := strconv.ParseFloat(strings.TrimSpace(f[2]), 64)
		if err != nil || (lab != 0 && lab != 1) {
			return nil, lineError(ln, "label %q is not 0 or 1", f[2])
		}
		// A sparse instance may have no features at all (all zero); a
		// dense one cannot.
		lineLayout := dense
		if len(feats) == 0 || strings.Contains(feats[0], ":") {
			lineLayout = sparse
		}
		if layout == unknown {
			layout = lineLayout
		}
		if lineLayout != layout {
			return nil, lineError(ln, "mixes sparse index:value and dense features (or has none)")
		}
		bi := g.bag(strings.TrimSpace(f[1]))
		b := &g.bags[bi]
		if lab == 1 && len(b.Labels) == 0 {
			b.Labels = []int{0}
		}
		if layout == dense {
			x := make([]float64, len(feats))
			for j, s := range feats {
				if x[j], err = parseFeature(s); err != nil {
					return nil, lineError(ln, "column %d: %v", j+4, err)
				}
			}
			if dim <= 0 {
				dim = len(x)
			}
			if len(x) != dim {
				return nil, lineError(ln, "%d features, want %d", len(x), dim)
			}
			b.Instances = append(b.Instances, x)
			continue
		}
		// A sparse instance stays sparse (mil.SparseVec): a text set
		// densified would take the features' count times the memory of
		// its non-zeros.
		v, top, err := parseSparsePairs(feats)
		if err != nil {
			return nil, lineError(ln, "%v", err)
		}
		maxIdx = max(maxIdx, top)
		b.Sparse = append(b.Sparse, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", ln+1, err)
	}
	if len(g.bags) == 0 {
		return nil, fmt.Errorf("%w: no instances", ErrFormat)
	}
	if layout == sparse {
		if dim <= 0 {
			dim = maxIdx
		} else if maxIdx > dim {
			return nil, fmt.Errorf("%w: feature index %d exceeds dimension %d", ErrFormat, maxIdx, dim)
		}
	}
	return &mil.Dataset{Name: name, Classes: binaryClasses(), Dim: dim, Bags: g.bags}, nil
}

// parseSparsePairs reads the 1-based index:value pairs of a MILL sparse
// line (fields 4 on) into a vector with 0-based ascending indices, and
// returns the largest 1-based index. Pairs may come in any order; an index
// given twice is an error, not a silent overwrite. Explicit zeros are
// dropped.
func parseSparsePairs(feats []string) (mil.SparseVec, int, error) {
	v := mil.SparseVec{Idx: make([]int32, 0, len(feats)), Val: make([]float64, 0, len(feats))}
	top, sorted := 0, true
	for j, s := range feats {
		is, vs, ok := strings.Cut(s, ":")
		if !ok {
			return mil.SparseVec{}, 0, fmt.Errorf("column %d: %q is not index:value", j+4, s)
		}
		k, err := strconv.ParseInt(strings.TrimSpace(is), 10, 32)
		if err != nil || k < 1 {
			return mil.SparseVec{}, 0, fmt.Errorf("column %d: index %q is not a positive 32-bit integer", j+4, is)
		}
		x, err := parseFeature(vs)
		if err != nil {
			return mil.SparseVec{}, 0, fmt.Errorf("column %d: %v", j+4, err)
		}
		if int(k) <= top {
			sorted = false
		}
		top = max(top, int(k))
		if x == 0 {
			continue
		}
		v.Idx = append(v.Idx, int32(k-1))
		v.Val = append(v.Val, x)
	}
	if !sorted {
		perm := make([]int, len(v.Idx))
		for i := range perm {
			perm[i] = i
		}
		slices.SortFunc(perm, func(a, b int) int { return cmp.Compare(v.Idx[a], v.Idx[b]) })
		idx, val := make([]int32, len(perm)), make([]float64, len(perm))
		for i, p := range perm {
			idx[i], val[i] = v.Idx[p], v.Val[p]
			if i > 0 && idx[i] == idx[i-1] {
				return mil.SparseVec{}, 0, fmt.Errorf("feature index %d given twice", idx[i]+1)
			}
		}
		v.Idx, v.Val = idx, val
	}
	return v, top, nil
}

// LoadMILL reads a MILL text file (see ReadMILL).
func LoadMILL(path string) (*mil.Dataset, error) {
	return textLoad(path, func(r io.Reader, name string) (*mil.Dataset, error) { return ReadMILL(r, name, 0) })
}

package dataset

import (
	"fmt"
	"math"

	"github.com/mimlstream/mimlstream/internal/dataset/mat"
	"github.com/mimlstream/mimlstream/internal/mil"
)

// Split is a train/test partition given as 0-based bag indices.
type Split struct {
	Train []int `json:"train"`
	Test  []int `json:"test"`
}

// LoadMSCV2 reads MSCV2.mat (Briggs et al.'s MSRC v2 MIML set, as used by
// Pham et al. 2017): 591 bags of 48-dimensional regions over 23 classes, with
// instance labels, and the file's own train/test split (trnidx/tstidx,
// converted to 0-based indices). The class names are not in the file and
// the ORLR paper does not list them, so they are c0..c22. Bag IDs are the
// 1-based MATLAB indices prefixed by the dataset name, e.g. "MSCV2-17".
func LoadMSCV2(path string) (*mil.Dataset, *Split, error) {
	vars, err := readMAT(path)
	if err != nil {
		return nil, nil, err
	}
	return mscv2FromVars(path, vars)
}

func mscv2FromVars(path string, vars map[string]*mat.Array) (*mil.Dataset, *Split, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s", path, ErrFormat, fmt.Sprintf(format, args...))
	}
	bags, y, Y := vars["Bags"], vars["y"], vars["Y"]
	if bags == nil || y == nil || Y == nil {
		return nil, nil, bad("MSCV2 needs variables Bags, y and Y")
	}
	if bags.Class != mat.CellClass || y.Class != mat.CellClass {
		return nil, nil, bad("Bags and y must be cell arrays (got %v, %v)", bags.Class, y.Class)
	}
	nb := len(bags.Cells)
	if len(y.Cells) != nb || Y.Rows() != nb || len(Y.Data) == 0 {
		return nil, nil, bad("Bags has %d cells, y %d, Y is %v", nb, len(y.Cells), Y.Dims)
	}
	nc := Y.Cols()
	d := &mil.Dataset{Name: datasetName(path), Classes: numberedClasses(nc), Bags: make([]mil.Bag, nb)}
	for i := range nb {
		x, yi := bags.Cells[i], y.Cells[i]
		n := x.Rows()
		if n == 0 || len(x.Data) == 0 {
			return nil, nil, bad("Bags{%d} is empty", i+1)
		}
		if i == 0 {
			d.Dim = x.Cols()
		}
		if x.Cols() != d.Dim {
			return nil, nil, bad("Bags{%d} has %d columns, want %d", i+1, x.Cols(), d.Dim)
		}
		if yi.Rows() != n || yi.Cols() != nc || len(yi.Data) != n*nc {
			return nil, nil, bad("y{%d} is %v, want %dx%d", i+1, yi.Dims, n, nc)
		}
		b := mil.Bag{
			ID:             fmt.Sprintf("%s-%d", d.Name, i+1),
			Instances:      rowsOf(x),
			Labels:         []int{},
			InstanceLabels: make([]int, n),
		}
		for r := range n {
			lab, err := oneHot(yi, r, 1, -1)
			if err != nil {
				return nil, nil, bad("y{%d} row %d: %v", i+1, r+1, err)
			}
			b.InstanceLabels[r] = lab
		}
		for c := range nc {
			switch Y.At(i, c) {
			case 1:
				b.Labels = append(b.Labels, c)
			case -1:
			default:
				return nil, nil, bad("Y(%d,%d) is %v, want -1 or 1", i+1, c+1, Y.At(i, c))
			}
		}
		d.Bags[i] = b
	}
	split := &Split{}
	for _, part := range []struct {
		name string
		dst  *[]int
	}{{"trnidx", &split.Train}, {"tstidx", &split.Test}} {
		a := vars[part.name]
		if a == nil {
			return nil, nil, bad("missing variable %s", part.name)
		}
		if a.Class == mat.CellClass {
			if len(a.Cells) != 1 {
				return nil, nil, bad("%s has %d cells, want 1", part.name, len(a.Cells))
			}
			a = a.Cells[0]
		}
		for _, v := range a.Data {
			if v != math.Trunc(v) || v < 1 || int(v) > nb {
				return nil, nil, bad("%s holds %v, not a bag index in 1..%d", part.name, v, nb)
			}
			*part.dst = append(*part.dst, int(v)-1)
		}
	}
	return d, split, nil
}

// NovelClass names the merged novel class of Pham et al.'s novel-class
// files: instances that belong to none of the known classes. It is the name
// under which models with an unknown class (orlr's unknown=true) recognise
// that class in a vocabulary.
const NovelClass = "unknown"

// LoadPham reads newlabels.mat from Pham et al.'s MIML novel-class data
// (HJA birdsong, Letter Frost/Carroll). X{i} is d x n_i (columns are
// instances), y{i} is an n_i x (C+1) one-hot matrix whose last column is the
// merged novel class, and Y is the B x C bag label matrix over the known
// classes. See the package documentation for how the novel class is mapped.
func LoadPham(path string) (*mil.Dataset, error) {
	vars, err := readMAT(path)
	if err != nil {
		return nil, err
	}
	return phamFromVars(path, vars)
}

func phamFromVars(path string, vars map[string]*mat.Array) (*mil.Dataset, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s", path, ErrFormat, fmt.Sprintf(format, args...))
	}
	X, y, Y := vars["X"], vars["y"], vars["Y"]
	if X == nil || y == nil || Y == nil {
		return nil, bad("Pham MIML-NC needs variables X, y and Y")
	}
	if X.Class != mat.CellClass || y.Class != mat.CellClass {
		return nil, bad("X and y must be cell arrays (got %v, %v)", X.Class, y.Class)
	}
	nb := len(X.Cells)
	if len(y.Cells) != nb || Y.Rows() != nb || len(Y.Data) == 0 {
		return nil, bad("X has %d cells, y %d, Y is %v", nb, len(y.Cells), Y.Dims)
	}
	nc := Y.Cols()
	classes := append(numberedClasses(nc), NovelClass)
	d := &mil.Dataset{Name: datasetName(path), Classes: classes, Bags: make([]mil.Bag, nb)}
	for i := range nb {
		x, yi := X.Cells[i], y.Cells[i]
		n := x.Cols()
		if n == 0 || len(x.Data) == 0 {
			return nil, bad("X{%d} is empty", i+1)
		}
		if i == 0 {
			d.Dim = x.Rows()
		}
		if x.Rows() != d.Dim {
			return nil, bad("X{%d} has %d rows (features), want %d", i+1, x.Rows(), d.Dim)
		}
		if yi.Rows() != n || yi.Cols() != nc+1 || len(yi.Data) != n*(nc+1) {
			return nil, bad("y{%d} is %v, want %dx%d", i+1, yi.Dims, n, nc+1)
		}
		b := mil.Bag{
			ID:             fmt.Sprintf("%s-%d", d.Name, i+1),
			Instances:      make([][]float64, n),
			Labels:         []int{},
			InstanceLabels: make([]int, n),
		}
		for j := range n {
			// Column j of X{i} is instance j; column-major storage makes it contiguous.
			b.Instances[j] = append([]float64(nil), x.Data[j*d.Dim:(j+1)*d.Dim]...)
			lab, err := oneHot(yi, j, 1, 0)
			if err != nil {
				return nil, bad("y{%d} row %d: %v", i+1, j+1, err)
			}
			b.InstanceLabels[j] = lab
		}
		for c := range nc {
			switch Y.At(i, c) {
			case 1:
				b.Labels = append(b.Labels, c)
			case 0:
			default:
				return nil, bad("Y(%d,%d) is %v, want 0 or 1", i+1, c+1, Y.At(i, c))
			}
		}
		d.Bags[i] = b
	}
	return d, nil
}

// rowsOf copies the rows of a column-major matrix.
func rowsOf(a *mat.Array) [][]float64 {
	n, m := a.Rows(), a.Cols()
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = make([]float64, m)
		for j := range m {
			rows[i][j] = a.At(i, j)
		}
	}
	return rows
}

// oneHot returns the column holding on in row r, requiring exactly one and
// every other entry to be off.
func oneHot(a *mat.Array, r int, on, off float64) (int, error) {
	lab := -1
	for c := range a.Cols() {
		switch v := a.At(r, c); v {
		case on:
			if lab >= 0 {
				return 0, fmt.Errorf("two classes (%d and %d)", lab, c)
			}
			lab = c
		case off:
		default:
			return 0, fmt.Errorf("column %d holds %v, want %v or %v", c+1, v, on, off)
		}
	}
	if lab < 0 {
		return 0, fmt.Errorf("no class")
	}
	return lab, nil
}

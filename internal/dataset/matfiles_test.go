package dataset

import (
	"errors"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset/mat"
	"github.com/mimlstream/mimlstream/internal/mil"
)

// colMajor builds a rows x cols numeric array from row-major values.
func colMajor(rows, cols int, rowMajor ...float64) *mat.Array {
	a := &mat.Array{Class: mat.Double, Dims: []int{rows, cols}, Data: make([]float64, rows*cols)}
	for i := range rows {
		for j := range cols {
			a.Data[j*rows+i] = rowMajor[i*cols+j]
		}
	}
	return a
}

func cells(rows, cols int, c ...*mat.Array) *mat.Array {
	return &mat.Array{Class: mat.CellClass, Dims: []int{rows, cols}, Cells: c}
}

// tinyMSCV2 is two bags over 3 classes in 2 dimensions: bag 1 has one
// instance of class 2; bag 2 has instances of classes 0 and 2.
func tinyMSCV2() map[string]*mat.Array {
	return map[string]*mat.Array{
		"Bags": cells(2, 1, colMajor(1, 2, 0.1, 0.2), colMajor(2, 2, 0.3, 0.4, 0.5, 0.6)),
		"y": cells(2, 1, colMajor(1, 3, -1, -1, 1),
			colMajor(2, 3, 1, -1, -1, -1, -1, 1)),
		"Y":      colMajor(2, 3, -1, -1, 1, 1, -1, 1),
		"trnidx": cells(1, 1, colMajor(1, 1, 2)),
		"tstidx": cells(1, 1, colMajor(1, 1, 1)),
	}
}

// tinyPham is two bags with 2 known classes plus novel, 3 features; X holds
// instances as columns.
func tinyPham() map[string]*mat.Array {
	return map[string]*mat.Array{
		"X": cells(1, 2,
			colMajor(3, 2, 1, 4, 2, 5, 3, 6), // instances (1,2,3) and (4,5,6)
			colMajor(3, 1, 7, 8, 9)),
		"y": cells(1, 2, colMajor(2, 3, 0, 1, 0, 0, 0, 1), colMajor(1, 3, 1, 0, 0)),
		"Y": colMajor(2, 2, 0, 1, 1, 0),
	}
}

func TestMSCV2FromVars(t *testing.T) {
	d, split, err := mscv2FromVars("dir/tiny.mat", tinyMSCV2())
	if err != nil {
		t.Fatal(err)
	}
	sameDataset(t, d, &mil.Dataset{Name: "tiny", Classes: []string{"c0", "c1", "c2"}, Dim: 2, Bags: []mil.Bag{
		{ID: "tiny-1", Instances: [][]float64{{0.1, 0.2}}, Labels: []int{2}, InstanceLabels: []int{2}},
		{ID: "tiny-2", Instances: [][]float64{{0.3, 0.4}, {0.5, 0.6}}, Labels: []int{0, 2}, InstanceLabels: []int{0, 2}},
	}})
	if len(split.Train) != 1 || split.Train[0] != 1 || len(split.Test) != 1 || split.Test[0] != 0 {
		t.Fatalf("split %+v, want train [1] test [0] (0-based)", split)
	}
}

func TestPhamFromVars(t *testing.T) {
	d, err := phamFromVars("x/HJA/newlabels.mat", tinyPham())
	if err != nil {
		t.Fatal(err)
	}
	sameDataset(t, d, &mil.Dataset{Name: "HJA", Classes: []string{"c0", "c1", "unknown"}, Dim: 3, Bags: []mil.Bag{
		{ID: "HJA-1", Instances: [][]float64{{1, 2, 3}, {4, 5, 6}}, Labels: []int{1}, InstanceLabels: []int{1, 2}},
		{ID: "HJA-2", Instances: [][]float64{{7, 8, 9}}, Labels: []int{0}, InstanceLabels: []int{0}},
	}})
}

func TestMATContentErrors(t *testing.T) {
	tests := []struct {
		name   string
		vars   func() map[string]*mat.Array
		pham   bool
		wantIn string
	}{
		{"mscv2 two classes in a row", func() map[string]*mat.Array {
			v := tinyMSCV2()
			v["y"].Cells[0] = colMajor(1, 3, 1, -1, 1)
			return v
		}, false, "y{1} row 1"},
		{"mscv2 no class in a row", func() map[string]*mat.Array {
			v := tinyMSCV2()
			v["y"].Cells[0] = colMajor(1, 3, -1, -1, -1)
			return v
		}, false, "no class"},
		{"mscv2 y not ±1", func() map[string]*mat.Array {
			v := tinyMSCV2()
			v["y"].Cells[0] = colMajor(1, 3, 0, 0, 1)
			return v
		}, false, "want 1 or -1"},
		{"mscv2 Y not ±1", func() map[string]*mat.Array {
			v := tinyMSCV2()
			v["Y"].Data[0] = 0
			return v
		}, false, "Y(1,1)"},
		{"mscv2 ragged dims", func() map[string]*mat.Array {
			v := tinyMSCV2()
			v["Bags"].Cells[1] = colMajor(2, 3, 1, 2, 3, 4, 5, 6)
			return v
		}, false, "Bags{2} has 3 columns"},
		{"mscv2 y rows mismatch", func() map[string]*mat.Array {
			v := tinyMSCV2()
			v["y"].Cells[1] = colMajor(1, 3, 1, -1, -1)
			return v
		}, false, "y{2}"},
		{"mscv2 split index out of range", func() map[string]*mat.Array {
			v := tinyMSCV2()
			v["tstidx"].Cells[0] = colMajor(1, 1, 3)
			return v
		}, false, "tstidx"},
		{"mscv2 missing split", func() map[string]*mat.Array {
			v := tinyMSCV2()
			delete(v, "trnidx")
			return v
		}, false, "trnidx"},
		{"mscv2 Bags not a cell", func() map[string]*mat.Array {
			v := tinyMSCV2()
			v["Bags"] = colMajor(1, 1, 1)
			return v
		}, false, "cell"},
		{"pham y not one-hot", func() map[string]*mat.Array {
			v := tinyPham()
			v["y"].Cells[1] = colMajor(1, 3, 1, 1, 0)
			return v
		}, true, "y{2} row 1"},
		{"pham y wrong width", func() map[string]*mat.Array {
			v := tinyPham()
			v["y"].Cells[1] = colMajor(1, 2, 1, 0)
			return v
		}, true, "y{2}"},
		{"pham Y not 0/1", func() map[string]*mat.Array {
			v := tinyPham()
			v["Y"].Data[1] = 2
			return v
		}, true, "Y(2,1)"},
		{"pham ragged features", func() map[string]*mat.Array {
			v := tinyPham()
			v["X"].Cells[1] = colMajor(2, 1, 7, 8)
			return v
		}, true, "X{2} has 2 rows"},
		{"pham empty bag", func() map[string]*mat.Array {
			v := tinyPham()
			v["X"].Cells[1] = &mat.Array{Class: mat.Double, Dims: []int{0, 0}}
			return v
		}, true, "X{2} is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.pham {
				_, err = phamFromVars("f.mat", tt.vars())
			} else {
				_, _, err = mscv2FromVars("f.mat", tt.vars())
			}
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.wantIn) || !strings.Contains(err.Error(), "f.mat") {
				t.Fatalf("err = %v, want ErrFormat naming f.mat and %q", err, tt.wantIn)
			}
		})
	}
}

package dataset

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"

	"github.com/mimlstream/mimlstream/internal/testsupport/shareddata"
)

// TestMILLSparseForm checks the sparse form itself, not only its dense
// image: ascending 0-based indices whatever the pair order, explicit zeros
// dropped, and a repeated index refused (the dense reader let the last one
// win silently).
func TestMILLSparseForm(t *testing.T) {
	d, err := ReadMILL(strings.NewReader("i1,b1,1,5:2,1:0.5,3:0\ni2,b1,0,\ni3,b2,0,2:1\n"), "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Dim != 5 || len(d.Bags) != 2 || d.Bags[0].Instances != nil {
		t.Fatalf("dim %d, %d bags, dense rows %v", d.Dim, len(d.Bags), d.Bags[0].Instances)
	}
	v := d.Bags[0].Sparse[0]
	if len(v.Idx) != 2 || v.Idx[0] != 0 || v.Idx[1] != 4 || v.Val[0] != 0.5 || v.Val[1] != 2 {
		t.Fatalf("instance 1 = %+v, want idx [0 4] val [0.5 2]", v)
	}
	if d.Bags[0].Sparse[1].Len() != 0 || len(d.Bags[0].Labels) != 1 || len(d.Bags[1].Labels) != 0 {
		t.Fatalf("bags %+v", d.Bags)
	}
	for i := range d.Bags {
		if err := d.Bags[i].Validate(d.Dim, 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"i1,b1,1,2:1,2:3\n", "i1,b1,1,3:1,1:1,3:2\n", "i1,b1,1,99999999999:1\n"} {
		if _, err := ReadMILL(strings.NewReader(bad), "s", 0); !errors.Is(err, ErrFormat) {
			t.Errorf("%q: err = %v, want ErrFormat", bad, err)
		}
	}
}

// TestLoadTREC9 loads the four TREC9 text sets (Andrews et al. 2002) from
// the shared data directory and checks their shape against the counts of
// the files (400 bags, 200 positive; about 3,300 instances with about 17
// non-zeros each over about 66,000 features), and that they stay sparse:
// the stored entries are the files' index:value pairs, not dim × instances.
func TestLoadTREC9(t *testing.T) {
	tests := []struct {
		file                   string
		insts, nnz, dim, posit int
	}{
		{"sparse_trec1.data", 3224, 55977, 66552, 200},
		{"sparse_trec2.data", 3344, 57236, 66153, 200},
		{"sparse_trec3.data", 3246, 55368, 66144, 200},
		{"sparse_trec4.data", 3391, 58123, 67085, 200},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			d, err := Load(shareddata.Path(t, "trec9/"+tc.file))
			if err != nil {
				t.Fatal(err)
			}
			pos := 0
			for i := range d.Bags {
				if d.Bags[i].Instances != nil {
					t.Fatalf("bag %s was densified", d.Bags[i].ID)
				}
				if len(d.Bags[i].Labels) > 0 {
					pos++
				}
			}
			if len(d.Bags) != 400 || d.NumInstances() != tc.insts || d.NonZeros() != tc.nnz || d.Dim != tc.dim || pos != tc.posit {
				t.Fatalf("%d bags (%d positive), %d instances, %d non-zeros, dim %d; want 400 (%d), %d, %d, %d",
					len(d.Bags), pos, d.NumInstances(), d.NonZeros(), d.Dim, tc.posit, tc.insts, tc.nnz, tc.dim)
			}
		})
	}
}

// TestARFFRelationalSparse reads Weka sparse instance rows ({index value,
// ...}, 0-based) inside relational bags: the bag loads sparse and equals
// the dense file it encodes, pairs in any order, a dense row of the same
// bag compressed in its place; a bag of dense rows only stays dense. The
// bad rows must be refused with the line (an index out of range, a
// repeated index even when one value is 0, a missing brace, a pair
// without a value).
func TestARFFRelationalSparse(t *testing.T) {
	const head = "@relation r\n@attribute id {a,b,c}\n@attribute bag relational\n @attribute f1 numeric\n @attribute f2 numeric\n @attribute f3 numeric\n@end bag\n@attribute l1 {0,1}\n@data\n"
	sparse := head + `a,"{2 5, 0 1}\n{}\n0,7,0",1` + "\n" + `b,"{1 -2}",0` + "\n" + `c,"1,2,3",1` + "\n"
	dense := head + `a,"1,0,5\n0,0,0\n0,7,0",1` + "\n" + `b,"0,-2,0",0` + "\n" + `c,"1,2,3",1` + "\n"
	got, err := ReadARFF(strings.NewReader(sparse), nil, "r")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReadARFF(strings.NewReader(dense), nil, "r")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Bags[0].IsSparse() || !got.Bags[1].IsSparse() || got.Bags[2].IsSparse() {
		t.Fatalf("sparse forms: %v %v %v, want true true false", got.Bags[0].IsSparse(), got.Bags[1].IsSparse(), got.Bags[2].IsSparse())
	}
	if v := got.Bags[0].Sparse[0]; len(v.Idx) != 2 || v.Idx[0] != 0 || v.Idx[1] != 2 {
		t.Fatalf("first instance %+v, want indices [0 2]", v)
	}
	sameDataset(t, got.Densified(), want)
	for _, bad := range []string{`a,"{3 1}",1`, `a,"{1 1, 1 0}",1`, `a,"{1 1",1`, `a,"{1}",1`} {
		if _, err := ReadARFF(strings.NewReader(head+bad+"\n"), nil, "r"); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "line 10") {
			t.Errorf("%q: err = %v, want ErrFormat at line 10", bad, err)
		}
	}
}

// TestWriteSparseDataset checks that the dense writers (JSON lines, CSV)
// write a sparse dataset's instances, not the empty Instances of its
// sparse bags: read back, the file equals the densified dataset.
func TestWriteSparseDataset(t *testing.T) {
	d, err := ReadMILL(strings.NewReader("i1,b1,1,3:2,1:0.5\ni2,b1,0,\ni3,b2,0,2:1\n"), "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer, *mil.Dataset) error
		read  func(io.Reader, string) (*mil.Dataset, error)
	}{{"jsonl", WriteJSONL, ReadJSONL}, {"csv", WriteCSV, ReadCSV}} {
		var buf bytes.Buffer
		if err := f.write(&buf, d); err != nil {
			t.Fatal(err)
		}
		got, err := f.read(&buf, "s")
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		sameDataset(t, got, d.Densified())
	}
}

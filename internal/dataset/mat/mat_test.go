package mat

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"slices"
	"testing"
)

// writer builds MAT v5 files for the tests, independently of the reader: it
// encodes arrays with a chosen storage type, in either byte order, with or
// without compression and with or without the small data element format.
type writer struct {
	order    byteOrder
	compress bool
	small    bool // use the packed 4-byte format for small elements
}

type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func (w writer) file(arrays ...*Array) []byte {
	var buf bytes.Buffer
	hdr := make([]byte, 128)
	copy(hdr, "MATLAB 5.0 MAT-file, written by the mat tests")
	for i := 46; i < 116; i++ {
		hdr[i] = ' '
	}
	w.order.PutUint16(hdr[124:], 0x0100)
	if w.order == binary.LittleEndian {
		copy(hdr[126:], "IM")
	} else {
		copy(hdr[126:], "MI")
	}
	buf.Write(hdr)
	for _, a := range arrays {
		m := w.element(miMATRIX, w.matrix(a))
		if w.compress {
			var z bytes.Buffer
			zw := zlib.NewWriter(&z)
			zw.Write(m)
			zw.Close()
			tag := make([]byte, 8)
			w.order.PutUint32(tag, miCOMPRESSED)
			w.order.PutUint32(tag[4:], uint32(z.Len()))
			buf.Write(tag)
			buf.Write(z.Bytes())
		} else {
			buf.Write(m)
		}
	}
	return buf.Bytes()
}

func (w writer) element(typ uint32, body []byte) []byte {
	if w.small && len(body) <= 4 && typ != miMATRIX {
		out := make([]byte, 8)
		w.order.PutUint32(out, uint32(len(body))<<16|typ)
		copy(out[4:], body)
		return out
	}
	out := make([]byte, 8, 8+len(body)+7)
	w.order.PutUint32(out, typ)
	w.order.PutUint32(out[4:], uint32(len(body)))
	out = append(out, body...)
	for len(out)%8 != 0 {
		out = append(out, 0)
	}
	return out
}

// storage picks the element type MATLAB would use for a class.
var storage = map[Class]uint32{
	Double: miDOUBLE, Single: miSINGLE, Int8: miINT8, Uint8: miUINT8, Int16: miINT16,
	Uint16: miUINT16, Int32: miINT32, Uint32: miUINT32, Int64: miINT64, Uint64: miUINT64, CharClass: miUINT16,
}

func (w writer) matrix(a *Array) []byte {
	var body []byte
	flags := make([]byte, 8)
	f := uint32(a.Class)
	if a.Logical {
		f |= 0x0200
	}
	w.order.PutUint32(flags, f)
	body = append(body, w.element(miUINT32, flags)...)
	dims := make([]byte, 4*len(a.Dims))
	for i, d := range a.Dims {
		w.order.PutUint32(dims[4*i:], uint32(d))
	}
	body = append(body, w.element(miINT32, dims)...)
	body = append(body, w.element(miINT8, []byte(a.Name))...)
	if a.Class == CellClass {
		for _, c := range a.Cells {
			body = append(body, w.element(miMATRIX, w.matrix(c))...)
		}
		return body
	}
	typ := storage[a.Class]
	var data []byte
	for _, v := range a.Data {
		switch typ {
		case miDOUBLE:
			data = w.order.AppendUint64(data, math.Float64bits(v))
		case miSINGLE:
			data = w.order.AppendUint32(data, math.Float32bits(float32(v)))
		case miINT8, miUINT8:
			data = append(data, byte(int8(v)))
			if typ == miUINT8 {
				data[len(data)-1] = byte(uint8(v))
			}
		case miINT16:
			data = w.order.AppendUint16(data, uint16(int16(v)))
		case miUINT16:
			data = w.order.AppendUint16(data, uint16(v))
		case miINT32:
			data = w.order.AppendUint32(data, uint32(int32(v)))
		case miUINT32:
			data = w.order.AppendUint32(data, uint32(v))
		case miINT64:
			data = w.order.AppendUint64(data, uint64(int64(v)))
		case miUINT64:
			data = w.order.AppendUint64(data, uint64(v))
		}
	}
	return append(body, w.element(typ, data)...)
}

func sameArray(t *testing.T, got, want *Array) {
	t.Helper()
	if got.Name != want.Name || got.Class != want.Class || !slices.Equal(got.Dims, want.Dims) || got.Logical != want.Logical {
		t.Fatalf("got %s %v %v logical=%v, want %s %v %v logical=%v",
			got.Name, got.Class, got.Dims, got.Logical, want.Name, want.Class, want.Dims, want.Logical)
	}
	if !slices.Equal(got.Data, want.Data) {
		t.Fatalf("%s data = %v, want %v", want.Name, got.Data, want.Data)
	}
	if len(got.Cells) != len(want.Cells) {
		t.Fatalf("%s has %d cells, want %d", want.Name, len(got.Cells), len(want.Cells))
	}
	for i := range want.Cells {
		sameArray(t, got.Cells[i], want.Cells[i])
	}
}

func testArrays() []*Array {
	return []*Array{
		{Name: "A", Class: Double, Dims: []int{2, 3}, Data: []float64{1, -2.5, 3, 4e10, math.Pi, 0}},
		{Name: "s", Class: Double, Dims: []int{1, 1}, Data: []float64{7}},
		{Name: "f", Class: Single, Dims: []int{1, 2}, Data: []float64{0.5, -1}},
		{Name: "i8", Class: Int8, Dims: []int{1, 3}, Data: []float64{-128, 0, 127}},
		{Name: "u8", Class: Uint8, Dims: []int{2, 2}, Data: []float64{0, 15, 200, 255}},
		{Name: "i16", Class: Int16, Dims: []int{1, 2}, Data: []float64{-1, 1}},
		{Name: "u16", Class: Uint16, Dims: []int{1, 5}, Data: []float64{1, 532, 591, 65535, 0}},
		{Name: "i32", Class: Int32, Dims: []int{1, 1}, Data: []float64{-70000}},
		{Name: "u32", Class: Uint32, Dims: []int{1, 1}, Data: []float64{4000000000}},
		{Name: "i64", Class: Int64, Dims: []int{1, 1}, Data: []float64{-1 << 40}},
		{Name: "u64", Class: Uint64, Dims: []int{1, 1}, Data: []float64{1 << 50}},
		{Name: "b", Class: Uint8, Logical: true, Dims: []int{1, 2}, Data: []float64{1, 0}},
		{Name: "txt", Class: CharClass, Dims: []int{1, 3}, Data: []float64{'a', 'b', 'c'}},
		{Name: "nd", Class: Double, Dims: []int{2, 2, 2}, Data: []float64{1, 2, 3, 4, 5, 6, 7, 8}},
		{Name: "C", Class: CellClass, Dims: []int{2, 1}, Cells: []*Array{
			{Class: Int16, Dims: []int{1, 2}, Data: []float64{-1, 1}},
			{Class: CellClass, Dims: []int{1, 1}, Cells: []*Array{
				{Class: Uint16, Dims: []int{1, 3}, Data: []float64{3, 2, 1}},
			}},
		}},
		{Name: "E", Class: Double, Dims: []int{0, 0}},
	}
}

func TestReadRoundTrip(t *testing.T) {
	for _, w := range []struct {
		name string
		w    writer
	}{
		{"le", writer{order: binary.LittleEndian}},
		{"le-small", writer{order: binary.LittleEndian, small: true}},
		{"le-compressed", writer{order: binary.LittleEndian, compress: true, small: true}},
		{"be", writer{order: binary.BigEndian}},
		{"be-compressed-small", writer{order: binary.BigEndian, compress: true, small: true}},
	} {
		t.Run(w.name, func(t *testing.T) {
			want := testArrays()
			vars, err := Read(bytes.NewReader(w.w.file(want...)))
			if err != nil {
				t.Fatal(err)
			}
			if len(vars) != len(want) {
				t.Fatalf("%d variables, want %d", len(vars), len(want))
			}
			for _, a := range want {
				got := vars[a.Name]
				if got == nil {
					t.Fatalf("variable %s missing", a.Name)
				}
				sameArray(t, got, a)
			}
			A := vars["A"]
			if A.Rows() != 2 || A.Cols() != 3 || A.At(1, 0) != -2.5 || A.At(0, 2) != math.Pi {
				t.Fatalf("column-major access wrong: %v", A.Data)
			}
			if vars["txt"].String() != "abc" {
				t.Fatalf("char = %q", vars["txt"].String())
			}
			if got := vars["C"].Cell(1, 0).Cell(0, 0).Data; !slices.Equal(got, []float64{3, 2, 1}) {
				t.Fatalf("nested cell = %v", got)
			}
			if nd := vars["nd"]; nd.Rows() != 2 || nd.Cols() != 4 || nd.Len() != 8 {
				t.Fatalf("nd: rows %d cols %d len %d", nd.Rows(), nd.Cols(), nd.Len())
			}
		})
	}
}

// TestStorageNarrowerThanClass: MATLAB stores a double array of small
// integers as miUINT8/miINT16 (as MSCV2.mat does); the class stays double.
func TestStorageNarrowerThanClass(t *testing.T) {
	w := writer{order: binary.LittleEndian, compress: true}
	a := &Array{Name: "y", Class: Int16, Dims: []int{1, 3}, Data: []float64{-1, 1, -1}}
	raw := w.file(a)
	// Rewrite the class byte of the array flags to double inside the
	// compressed stream: rebuild it by hand.
	m := w.matrix(a)
	m[8] = byte(Double) // flags payload starts after the 8-byte tag
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(w.element(miMATRIX, m))
	zw.Close()
	raw = raw[:128]
	raw = binary.LittleEndian.AppendUint32(raw, miCOMPRESSED)
	raw = binary.LittleEndian.AppendUint32(raw, uint32(z.Len()))
	raw = append(raw, z.Bytes()...)
	vars, err := Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if y := vars["y"]; y.Class != Double || !slices.Equal(y.Data, []float64{-1, 1, -1}) {
		t.Fatalf("got %v %v", y.Class, y.Data)
	}
}

func TestReadMalformed(t *testing.T) {
	w := writer{order: binary.LittleEndian}
	good := w.file(testArrays()...)
	goodZ := writer{order: binary.LittleEndian, compress: true}.file(testArrays()...)
	badVersion := slices.Clone(good)
	badVersion[124] = 2
	badEndian := slices.Clone(good)
	copy(badEndian[126:], "XX")
	// A tag claiming far more bytes than the file holds.
	lying := slices.Clone(good)
	binary.LittleEndian.PutUint32(lying[132:], 1<<31)
	// A 2x3 double whose dims claim 1e6 x 1e3 elements.
	hugeDims := writer{order: binary.LittleEndian}.file(&Array{Name: "A", Class: Double, Dims: []int{1000000, 1000}, Data: []float64{1}})
	// Sparse class (5) is not supported.
	sparse := writer{order: binary.LittleEndian}.file(&Array{Name: "S", Class: Double, Dims: []int{1, 1}, Data: []float64{1}})
	sparse[128+8+8] = byte(SparseClass)
	corruptZ := slices.Clone(goodZ)
	for i := 140; i < 160 && i < len(corruptZ); i++ {
		corruptZ[i] ^= 0xff
	}
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"short header", good[:100]},
		{"not a MAT file", append([]byte("hello world"), make([]byte, 200)...)},
		{"bad version", badVersion},
		{"bad endian", badEndian},
		{"truncated element", good[:len(good)-5]},
		{"truncated tag", good[:132]},
		{"truncated compressed", goodZ[:len(goodZ)-9]},
		{"corrupt zlib", corruptZ},
		{"lying length", lying},
		{"huge dims", hugeDims},
		{"sparse", sparse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.in))
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want ErrFormat", err)
			}
		})
	}
}

func TestDecompressionBudget(t *testing.T) {
	big := &Array{Name: "Z", Class: Double, Dims: []int{1, 100000}, Data: make([]float64, 100000)}
	raw := writer{order: binary.LittleEndian, compress: true}.file(big)
	if _, err := ReadOptions(bytes.NewReader(raw), Options{MaxBytes: 1 << 20}); err != nil {
		t.Fatalf("1 MiB budget: %v", err)
	}
	if _, err := ReadOptions(bytes.NewReader(raw), Options{MaxBytes: 100000}); !errors.Is(err, ErrFormat) {
		t.Fatalf("100 kB budget for 800 kB of data: err = %v, want ErrFormat", err)
	}
}

func FuzzRead(f *testing.F) {
	for _, w := range []writer{{order: binary.LittleEndian}, {order: binary.BigEndian, small: true}, {order: binary.LittleEndian, compress: true}} {
		f.Add(w.file(testArrays()...))
	}
	if raw, err := os.ReadFile("../../../testdata/letter_frost_pham_novelclass/newlabels.mat"); err == nil {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		vars, err := ReadOptions(bytes.NewReader(in), Options{MaxBytes: 1 << 24})
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		for _, a := range vars {
			checkShape(t, a)
		}
	})
}

// checkShape asserts the invariant every successfully read array satisfies.
func checkShape(t *testing.T, a *Array) {
	if a.Class == CellClass {
		if len(a.Cells) != a.Len() {
			t.Fatalf("%s: %d cells for dims %v", a.Name, len(a.Cells), a.Dims)
		}
		for _, c := range a.Cells {
			checkShape(t, c)
		}
		return
	}
	if len(a.Data) != a.Len() {
		t.Fatalf("%s: %d values for dims %v", a.Name, len(a.Data), a.Dims)
	}
}

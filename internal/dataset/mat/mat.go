// Package mat reads the subset of the MATLAB Level 5 MAT-file format that the
// project's data sets use: numeric, logical, char and cell arrays, stored
// plainly or inside miCOMPRESSED (zlib) elements, in either byte order.
//
// The reader is deliberately small and defensive: every length read from the
// file is checked against what is actually there, decompression is bounded,
// and nesting depth is capped, so malformed or hostile input yields an error
// wrapping ErrFormat rather than a panic or an unbounded allocation.
package mat

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// ErrFormat marks input that is not a valid (or not a supported) MAT v5 file.
var ErrFormat = errors.New("mat: malformed MAT-file")

// Class is a MATLAB array class (mxCLASS_ID).
type Class uint8

// The array classes defined by the MAT v5 format.
const (
	CellClass   Class = 1
	StructClass Class = 2
	ObjectClass Class = 3
	CharClass   Class = 4
	SparseClass Class = 5
	Double      Class = 6
	Single      Class = 7
	Int8        Class = 8
	Uint8       Class = 9
	Int16       Class = 10
	Uint16      Class = 11
	Int32       Class = 12
	Uint32      Class = 13
	Int64       Class = 14
	Uint64      Class = 15
)

var classNames = map[Class]string{
	CellClass: "cell", StructClass: "struct", ObjectClass: "object", CharClass: "char",
	SparseClass: "sparse", Double: "double", Single: "single", Int8: "int8", Uint8: "uint8",
	Int16: "int16", Uint16: "uint16", Int32: "int32", Uint32: "uint32", Int64: "int64", Uint64: "uint64",
}

func (c Class) String() string {
	if s, ok := classNames[c]; ok {
		return s
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Data element types (miXXX).
const (
	miINT8       = 1
	miUINT8      = 2
	miINT16      = 3
	miUINT16     = 4
	miINT32      = 5
	miUINT32     = 6
	miSINGLE     = 7
	miDOUBLE     = 9
	miINT64      = 12
	miUINT64     = 13
	miMATRIX     = 14
	miCOMPRESSED = 15
	miUTF8       = 16
	miUTF16      = 17
	miUTF32      = 18
)

// Array is one MATLAB array. Numeric, logical and char arrays fill Data
// (converted to float64, column-major); cell arrays fill Cells (column-major).
type Array struct {
	Name    string
	Class   Class
	Dims    []int
	Logical bool
	Data    []float64
	Cells   []*Array
}

// Len is the number of elements, the product of Dims.
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Dims {
		n *= d
	}
	return n
}

// Rows is Dims[0] (0 for an array without dimensions).
func (a *Array) Rows() int {
	if len(a.Dims) == 0 {
		return 0
	}
	return a.Dims[0]
}

// Cols is the product of the trailing dimensions, so an N-D array reads as
// a Rows x Cols matrix, as MATLAB's reshape(a, size(a,1), []) would.
func (a *Array) Cols() int {
	if len(a.Dims) < 2 {
		return 0
	}
	n := 1
	for _, d := range a.Dims[1:] {
		n *= d
	}
	return n
}

// At returns element (i, j) of a numeric array seen as a Rows x Cols
// matrix. It panics on an out-of-range index, like a slice would.
func (a *Array) At(i, j int) float64 { return a.Data[j*a.Dims[0]+i] }

// Cell returns cell (i, j) of a cell array seen as a Rows x Cols matrix.
func (a *Array) Cell(i, j int) *Array { return a.Cells[j*a.Dims[0]+i] }

// String returns the text of a char array.
func (a *Array) String() string {
	r := make([]rune, len(a.Data))
	for i, v := range a.Data {
		r[i] = rune(v)
	}
	return string(r)
}

// Options bound the resources a Read may use.
type Options struct {
	// MaxBytes caps the total decompressed size of the file's variables;
	// 0 means DefaultMaxBytes.
	MaxBytes int64
}

// DefaultMaxBytes is the decompression budget when Options.MaxBytes is 0.
const DefaultMaxBytes = 1 << 30

// maxDepth bounds the nesting of cell arrays; the data sets nest at most twice.
const maxDepth = 32

// headerLen is the size of the MAT v5 file header.
const headerLen = 128

// Read parses a MAT v5 file and returns its variables by name.
func Read(r io.Reader) (map[string]*Array, error) {
	return ReadOptions(r, Options{})
}

// ReadOptions is Read with explicit resource limits.
func ReadOptions(r io.Reader, opt Options) (map[string]*Array, error) {
	budget := opt.MaxBytes
	if budget <= 0 {
		budget = DefaultMaxBytes
	}
	raw, err := io.ReadAll(io.LimitReader(r, budget+1))
	if err != nil {
		return nil, fmt.Errorf("mat: reading: %w", err)
	}
	if int64(len(raw)) > budget {
		return nil, fmt.Errorf("%w: file larger than %d bytes", ErrFormat, budget)
	}
	if len(raw) < headerLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the 128-byte header", ErrFormat, len(raw))
	}
	if !bytes.HasPrefix(raw, []byte("MATLAB 5.0 MAT-file")) {
		return nil, fmt.Errorf("%w: missing \"MATLAB 5.0 MAT-file\" header text", ErrFormat)
	}
	var order binary.ByteOrder
	switch string(raw[126:128]) {
	case "IM":
		order = binary.LittleEndian
	case "MI":
		order = binary.BigEndian
	default:
		return nil, fmt.Errorf("%w: bad endian indicator %q", ErrFormat, raw[126:128])
	}
	if v := order.Uint16(raw[124:126]); v != 0x0100 {
		return nil, fmt.Errorf("%w: unsupported version 0x%04x", ErrFormat, v)
	}
	p := &parser{order: order, budget: budget - int64(len(raw))}
	vars := make(map[string]*Array)
	buf := raw[headerLen:]
	for off := 0; off < len(buf); {
		at := headerLen + off // file offset, for messages
		typ, body, next, err := p.element(buf, off)
		if err != nil {
			return nil, fmt.Errorf("top-level element at offset %d: %w", at, err)
		}
		off = next
		switch typ {
		case miCOMPRESSED:
			inner, err := p.inflate(body)
			if err != nil {
				return nil, fmt.Errorf("compressed element at offset %d: %w", at, err)
			}
			ityp, ibody, _, err := p.element(inner, 0)
			if err != nil {
				return nil, fmt.Errorf("compressed element at offset %d: %w", at, err)
			}
			if ityp != miMATRIX {
				continue // nothing else can name a variable
			}
			a, err := p.matrix(ibody, 0)
			if err != nil {
				return nil, err
			}
			vars[a.Name] = a
		case miMATRIX:
			a, err := p.matrix(body, 0)
			if err != nil {
				return nil, err
			}
			vars[a.Name] = a
		}
	}
	return vars, nil
}

type parser struct {
	order  binary.ByteOrder
	budget int64 // decompressed bytes still allowed
}

// element decodes the data element starting at buf[off]: its type, its
// payload and the offset of the following element. It handles the small
// data element format (payload of at most 4 bytes packed into the tag) and
// the 8-byte padding of ordinary elements. Compressed elements are not
// padded by MATLAB, so their payload ends exactly at the stated length.
func (p *parser) element(buf []byte, off int) (typ uint32, body []byte, next int, err error) {
	if len(buf)-off < 8 {
		return 0, nil, 0, fmt.Errorf("%w: truncated element tag (%d bytes left)", ErrFormat, len(buf)-off)
	}
	first := p.order.Uint32(buf[off:])
	if small := first >> 16; small != 0 {
		n := int(small)
		if n > 4 {
			return 0, nil, 0, fmt.Errorf("%w: small data element of %d bytes", ErrFormat, n)
		}
		return first & 0xffff, buf[off+4 : off+4+n], off + 8, nil
	}
	n := uint64(p.order.Uint32(buf[off+4:]))
	start := off + 8
	if n > uint64(len(buf)-start) {
		return 0, nil, 0, fmt.Errorf("%w: element of type %d claims %d bytes, %d left", ErrFormat, first, n, len(buf)-start)
	}
	end := start + int(n)
	next = end
	if first != miCOMPRESSED {
		next = start + int((n+7)&^7)
		if next > len(buf) {
			// Some writers omit the padding of the last element.
			next = len(buf)
		}
	}
	return first, buf[start:end], next, nil
}

func (p *parser) inflate(body []byte) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, p.budget+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if int64(len(out)) > p.budget {
		return nil, fmt.Errorf("%w: decompressed data exceeds the %d-byte budget", ErrFormat, p.budget)
	}
	p.budget -= int64(len(out))
	return out, nil
}

// matrix decodes the payload of an miMATRIX element.
func (p *parser) matrix(body []byte, depth int) (*Array, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: arrays nested deeper than %d", ErrFormat, maxDepth)
	}
	if len(body) == 0 {
		// An empty miMATRIX stands for [] (e.g. an empty cell element).
		return &Array{Class: Double, Dims: []int{0, 0}}, nil
	}
	// Array flags.
	typ, flags, off, err := p.element(body, 0)
	if err != nil {
		return nil, fmt.Errorf("array flags: %w", err)
	}
	if typ != miUINT32 || len(flags) < 8 {
		return nil, fmt.Errorf("%w: array flags have type %d and %d bytes", ErrFormat, typ, len(flags))
	}
	f := p.order.Uint32(flags)
	a := &Array{Class: Class(f & 0xff), Logical: f&0x0200 != 0}
	complexArray := f&0x0800 != 0

	// Dimensions.
	typ, dimsRaw, off, err := p.element(body, off)
	if err != nil {
		return nil, fmt.Errorf("dimensions: %w", err)
	}
	if typ != miINT32 || len(dimsRaw)%4 != 0 || len(dimsRaw) < 8 {
		return nil, fmt.Errorf("%w: dimensions have type %d and %d bytes", ErrFormat, typ, len(dimsRaw))
	}
	n := 1
	for i := 0; i < len(dimsRaw); i += 4 {
		d := int32(p.order.Uint32(dimsRaw[i:]))
		if d < 0 {
			return nil, fmt.Errorf("%w: negative dimension %d", ErrFormat, d)
		}
		if d > 0 && n > math.MaxInt32/int(d) {
			return nil, fmt.Errorf("%w: dimensions overflow", ErrFormat)
		}
		n *= int(d)
		a.Dims = append(a.Dims, int(d))
	}
	// Every element is backed by at least one byte of the array (eight, the
	// tag, for a cell), so a larger count is a lie we refuse before allocating.
	if n > len(body) {
		return nil, fmt.Errorf("%w: %d elements cannot fit in a %d-byte array", ErrFormat, n, len(body))
	}

	// Name.
	typ, name, off, err := p.element(body, off)
	if err != nil {
		return nil, fmt.Errorf("array name: %w", err)
	}
	if typ != miINT8 && typ != miUINT8 {
		return nil, fmt.Errorf("%w: array name has type %d", ErrFormat, typ)
	}
	a.Name = string(name)

	switch a.Class {
	case CellClass:
		a.Cells = make([]*Array, n)
		for i := range n {
			typ, cb, next, err := p.element(body, off)
			if err != nil {
				return nil, fmt.Errorf("%s cell %d: %w", a.Name, i, err)
			}
			if typ != miMATRIX {
				return nil, fmt.Errorf("%w: %s cell %d has element type %d", ErrFormat, a.Name, i, typ)
			}
			c, err := p.matrix(cb, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s cell %d: %w", a.Name, i, err)
			}
			a.Cells[i] = c
			off = next
		}
		return a, nil
	case CharClass, Double, Single, Int8, Uint8, Int16, Uint16, Int32, Uint32, Int64, Uint64:
		typ, real, off, err := p.element(body, off)
		if err != nil {
			return nil, fmt.Errorf("%s real part: %w", a.Name, err)
		}
		if a.Data, err = p.numbers(typ, real, n); err != nil {
			return nil, fmt.Errorf("%s real part: %w", a.Name, err)
		}
		if complexArray {
			// The imaginary part is read for validation and dropped: no data
			// set of the project is complex.
			typ, imag, _, err := p.element(body, off)
			if err != nil {
				return nil, fmt.Errorf("%s imaginary part: %w", a.Name, err)
			}
			if _, err := p.numbers(typ, imag, n); err != nil {
				return nil, fmt.Errorf("%s imaginary part: %w", a.Name, err)
			}
		}
		return a, nil
	}
	return nil, fmt.Errorf("%w: variable %q has unsupported class %v", ErrFormat, a.Name, a.Class)
}

// numbers converts the payload of a numeric data element to float64. The
// storage type may be narrower than the array class (MATLAB stores a double
// array of small integers as miUINT8, for instance).
func (p *parser) numbers(typ uint32, b []byte, n int) ([]float64, error) {
	var size int
	switch typ {
	case miINT8, miUINT8, miUTF8:
		size = 1
	case miINT16, miUINT16, miUTF16:
		size = 2
	case miINT32, miUINT32, miSINGLE, miUTF32:
		size = 4
	case miDOUBLE, miINT64, miUINT64:
		size = 8
	default:
		return nil, fmt.Errorf("%w: numeric data of element type %d", ErrFormat, typ)
	}
	if typ == miUTF8 || typ == miUTF16 {
		// Variable-width encodings: decode to code points.
		var rs []rune
		if typ == miUTF8 {
			rs = []rune(string(b))
		} else {
			if len(b)%2 != 0 {
				return nil, fmt.Errorf("%w: odd UTF-16 length %d", ErrFormat, len(b))
			}
			for i := 0; i < len(b); i += 2 {
				rs = append(rs, rune(p.order.Uint16(b[i:])))
			}
		}
		if len(rs) != n {
			return nil, fmt.Errorf("%w: %d characters for %d elements", ErrFormat, len(rs), n)
		}
		out := make([]float64, n)
		for i, r := range rs {
			out[i] = float64(r)
		}
		return out, nil
	}
	if len(b) != n*size {
		return nil, fmt.Errorf("%w: %d bytes of element type %d for %d elements", ErrFormat, len(b), typ, n)
	}
	out := make([]float64, n)
	o := p.order
	for i := range out {
		s := b[i*size:]
		switch typ {
		case miINT8:
			out[i] = float64(int8(s[0]))
		case miUINT8:
			out[i] = float64(s[0])
		case miINT16:
			out[i] = float64(int16(o.Uint16(s)))
		case miUINT16:
			out[i] = float64(o.Uint16(s))
		case miINT32:
			out[i] = float64(int32(o.Uint32(s)))
		case miUINT32, miUTF32:
			out[i] = float64(o.Uint32(s))
		case miSINGLE:
			out[i] = float64(math.Float32frombits(o.Uint32(s)))
		case miDOUBLE:
			out[i] = math.Float64frombits(o.Uint64(s))
		case miINT64:
			out[i] = float64(int64(o.Uint64(s)))
		case miUINT64:
			out[i] = float64(o.Uint64(s))
		}
	}
	return out, nil
}

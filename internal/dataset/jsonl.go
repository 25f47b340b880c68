package dataset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// JSONLFormat identifies the header line of the JSON-lines bag format.
const JSONLFormat = "mimlstream.bags/v1"

// JSONLHeader is the optional first line of a JSON-lines file.
type JSONLHeader struct {
	Format  string   `json:"format"`
	Name    string   `json:"name,omitempty"`
	Classes []string `json:"classes"`
	Dim     int      `json:"dim"`
}

// jsonBag is the wire form of a bag. mil.Bag's own tags drop an empty label
// set, which would turn a negative bag into an unlabeled one; the pointer
// keeps nil (absent) and empty ([]) apart.
type jsonBag struct {
	ID             string      `json:"id"`
	Instances      [][]float64 `json:"instances"`
	Labels         *[]int      `json:"labels,omitempty"`
	InstanceLabels []int       `json:"instance_labels,omitempty"`
}

// EncodeBag returns the JSON-lines form of one bag, without a newline.
// It is the message format of the ingest topic as well.
func EncodeBag(b *mil.Bag) ([]byte, error) {
	jb := jsonBag{ID: b.ID, Instances: b.Instances, InstanceLabels: b.InstanceLabels}
	if b.Labels != nil {
		jb.Labels = &b.Labels
	}
	out, err := json.Marshal(jb)
	if err != nil {
		// NaN and Inf have no JSON form.
		return nil, fmt.Errorf("bag %q: %w", b.ID, err)
	}
	return out, nil
}

// DecodeBag parses one bag line. Labels are sorted and deduplicated; the
// bag is otherwise returned as written, unvalidated (see mil.Bag.Validate).
func DecodeBag(line []byte) (mil.Bag, error) {
	var jb jsonBag
	if err := json.Unmarshal(line, &jb); err != nil {
		return mil.Bag{}, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if jb.ID == "" {
		return mil.Bag{}, fmt.Errorf("%w: bag without an id", ErrFormat)
	}
	b := mil.Bag{ID: jb.ID, Instances: jb.Instances, InstanceLabels: jb.InstanceLabels}
	if jb.Labels != nil {
		b.Labels = normLabels(*jb.Labels)
		if b.Labels == nil {
			b.Labels = []int{}
		}
	}
	return b, nil
}

// JSONLReader reads bags one at a time from the JSON-lines format, so a large
// file never needs to fit in memory.
type JSONLReader struct {
	sc      *bufio.Scanner
	line    int
	header  *JSONLHeader
	pending []byte // first bag line, read while looking for a header
	pendLn  int
	dim     int
}

// NewJSONLReader reads the header, if any, and prepares to read bags.
func NewJSONLReader(r io.Reader) (*JSONLReader, error) {
	jr := &JSONLReader{sc: newLineScanner(r)}
	first, ln, err := jr.nextLine()
	if errors.Is(err, io.EOF) {
		return jr, nil
	}
	if err != nil {
		return nil, err
	}
	var probe struct {
		Format *string `json:"format"`
	}
	if err := json.Unmarshal(first, &probe); err != nil {
		return nil, fmt.Errorf("line %d: %w: %w", ln, ErrFormat, err)
	}
	if probe.Format == nil {
		jr.pending, jr.pendLn = first, ln
		return jr, nil
	}
	var h JSONLHeader
	if err := json.Unmarshal(first, &h); err != nil {
		return nil, fmt.Errorf("line %d: %w: header: %w", ln, ErrFormat, err)
	}
	if h.Format != JSONLFormat {
		return nil, fmt.Errorf("line %d: %w: header format %q, want %q", ln, ErrFormat, h.Format, JSONLFormat)
	}
	if h.Dim < 0 {
		return nil, fmt.Errorf("line %d: %w: header dim %d", ln, ErrFormat, h.Dim)
	}
	jr.header, jr.dim = &h, h.Dim
	return jr, nil
}

// Header returns the header line, or nil when the file has none.
func (jr *JSONLReader) Header() *JSONLHeader { return jr.header }

func (jr *JSONLReader) nextLine() ([]byte, int, error) {
	for jr.sc.Scan() {
		jr.line++
		if b := bytes.TrimSpace(jr.sc.Bytes()); len(b) > 0 {
			return b, jr.line, nil
		}
	}
	if err := jr.sc.Err(); err != nil {
		return nil, jr.line + 1, fmt.Errorf("line %d: %w", jr.line+1, err)
	}
	return nil, jr.line, io.EOF
}

// Next returns the next bag, validated against the header (or, without one,
// against the first bag's dimension), or io.EOF after the last.
func (jr *JSONLReader) Next() (mil.Bag, error) {
	line, ln := jr.pending, jr.pendLn
	jr.pending = nil
	if line == nil {
		var err error
		if line, ln, err = jr.nextLine(); err != nil {
			return mil.Bag{}, err
		}
	}
	b, err := DecodeBag(line)
	if err != nil {
		return mil.Bag{}, fmt.Errorf("line %d: %w", ln, err)
	}
	if jr.dim == 0 && len(b.Instances) > 0 {
		jr.dim = len(b.Instances[0])
	}
	classes := 0
	if jr.header != nil {
		classes = len(jr.header.Classes)
	}
	if err := b.Validate(jr.dim, classes); err != nil {
		return mil.Bag{}, fmt.Errorf("line %d: %w: %w", ln, ErrFormat, err)
	}
	return b, nil
}

// ScanJSONL calls fn for each bag of r in order, stopping at the first error
// (from the input, from fn, or ctx being done).
func ScanJSONL(ctx context.Context, r io.Reader, fn func(mil.Bag) error) error {
	jr, err := NewJSONLReader(r)
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := jr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(b); err != nil {
			return err
		}
	}
}

// ReadJSONL reads a whole JSON-lines data set. When the header is missing
// or has no classes, they are c0..cK-1 for the largest label K-1 seen; the
// header's name, if any, overrides name.
func ReadJSONL(r io.Reader, name string) (*mil.Dataset, error) {
	jr, err := NewJSONLReader(r)
	if err != nil {
		return nil, err
	}
	d := &mil.Dataset{Name: name}
	maxLabel := -1
	for {
		b, err := jr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		for _, l := range b.Labels {
			maxLabel = max(maxLabel, l)
		}
		for _, l := range b.InstanceLabels {
			maxLabel = max(maxLabel, l)
		}
		d.Bags = append(d.Bags, b)
	}
	d.Dim = jr.dim
	d.Classes = numberedClasses(maxLabel + 1)
	if h := jr.Header(); h != nil {
		if h.Classes != nil {
			d.Classes = h.Classes
		}
		if h.Name != "" {
			d.Name = h.Name
		}
	}
	if len(d.Bags) == 0 && jr.Header() == nil {
		return nil, fmt.Errorf("%w: no bags and no header", ErrFormat)
	}
	return d, nil
}

// LoadJSONL reads a JSON-lines file (see ReadJSONL).
func LoadJSONL(path string) (*mil.Dataset, error) {
	return textLoad(path, ReadJSONL)
}

// WriteJSONL writes d as a header line followed by one line per bag.
func WriteJSONL(w io.Writer, d *mil.Dataset) error {
	d = d.Densified() // the format has dense instances only
	bw := bufio.NewWriter(w)
	h, err := json.Marshal(JSONLHeader{Format: JSONLFormat, Name: d.Name, Classes: d.Classes, Dim: d.Dim})
	if err != nil {
		return err
	}
	bw.Write(h)
	bw.WriteByte('\n')
	for i := range d.Bags {
		line, err := EncodeBag(&d.Bags[i])
		if err != nil {
			return err
		}
		bw.Write(line)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// SaveJSONL writes d to path (see WriteJSONL).
func SaveJSONL(path string, d *mil.Dataset) error {
	return saveFile(path, d, WriteJSONL)
}

func saveFile(path string, d *mil.Dataset, write func(io.Writer, *mil.Dataset) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, d); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

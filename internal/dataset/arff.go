package dataset

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// ReadMulanXML returns the label names of a Mulan labels file
// (<labels><label name="..."/>...</labels>), in document order; nested
// (hierarchical) labels are flattened.
func ReadMulanXML(r io.Reader) ([]string, error) {
	dec := xml.NewDecoder(r)
	var names []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: xml: %w", ErrFormat, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "label" {
			continue
		}
		for _, a := range se.Attr {
			if a.Name.Local == "name" {
				names = append(names, a.Value)
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: xml: no <label name=...> elements", ErrFormat)
	}
	return names, nil
}

type arffAttr struct {
	name       string
	typ        string // lower-cased type word: numeric, relational, {...}, string...
	relational []arffAttr
}

func (a arffAttr) numeric() bool {
	return a.typ == "numeric" || a.typ == "real" || a.typ == "integer"
}

// ReadARFF reads a Weka relational ARFF multi-instance data set: one bag
// per data line, the bag's instances in the quoted relational field (rows
// separated by an escaped newline, \n), and 0/1 label attributes. labels
// names the label attributes (from the Mulan XML); when nil, every
// attribute after the relational one is a label. The attribute just before
// the relational one, if any, gives the bag ID.
//
// A file without a relational attribute (Mulan's Corel5k) is read with
// readFlatARFF when labels are given: each present feature becomes a
// one-hot instance.
func ReadARFF(r io.Reader, labels []string, name string) (*mil.Dataset, error) {
	sc := newLineScanner(r)
	var (
		attrs []arffAttr
		inRel = -1 // index in attrs of the relational attribute being declared
		ln    int
	)
	// Header.
	inData := false
	for !inData && sc.Scan() {
		ln++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '%' {
			continue
		}
		kw, rest := line, ""
		if i := strings.IndexAny(line, " \t"); i >= 0 {
			kw, rest = line[:i], strings.TrimSpace(line[i:])
		}
		kw = strings.ToLower(kw)
		switch kw {
		case "@relation":
		case "@attribute":
			an, typ, err := splitAttr(rest)
			if err != nil {
				return nil, lineError(ln, "%v", err)
			}
			a := arffAttr{name: an, typ: typ}
			if inRel >= 0 {
				if !a.numeric() {
					return nil, lineError(ln, "relational attribute %s has non-numeric member %s (%s)", attrs[inRel].name, an, typ)
				}
				attrs[inRel].relational = append(attrs[inRel].relational, a)
				continue
			}
			if typ == "relational" {
				inRel = len(attrs)
			}
			attrs = append(attrs, a)
		case "@end":
			if inRel < 0 {
				return nil, lineError(ln, "@end outside a relational attribute")
			}
			inRel = -1
		case "@data":
			inData = true
		default:
			return nil, lineError(ln, "unexpected %q in the header", truncate(line))
		}
	}
	if !inData {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("line %d: %w", ln+1, err)
		}
		return nil, fmt.Errorf("%w: no @data section", ErrFormat)
	}
	rel := -1
	for i, a := range attrs {
		if a.typ == "relational" {
			if rel >= 0 {
				return nil, fmt.Errorf("%w: more than one relational attribute (%s, %s)", ErrFormat, attrs[rel].name, a.name)
			}
			rel = i
		}
	}
	if rel < 0 {
		if labels == nil {
			return nil, fmt.Errorf("%w: no relational attribute and no label XML: not a multi-instance ARFF", ErrFormat)
		}
		return readFlatARFF(sc, ln, attrs, labels, name)
	}
	if len(attrs[rel].relational) == 0 {
		return nil, fmt.Errorf("%w: relational attribute %s has no members", ErrFormat, attrs[rel].name)
	}
	dim := len(attrs[rel].relational)
	if labels == nil {
		for i := rel + 1; i < len(attrs); i++ {
			labels = append(labels, attrs[i].name)
		}
	}
	labelCols, err := attrIndices(attrs, labels)
	if err != nil {
		return nil, err
	}

	d := &mil.Dataset{Name: name, Classes: labels, Dim: dim}
	for sc.Scan() {
		ln++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '%' {
			continue
		}
		if line[0] == '{' {
			return nil, lineError(ln, "sparse rows are not supported with a relational attribute")
		}
		f, err := splitARFFRow(line)
		if err != nil {
			return nil, lineError(ln, "%v", err)
		}
		if len(f) != len(attrs) {
			return nil, lineError(ln, "%d values, want %d attributes", len(f), len(attrs))
		}
		b := mil.Bag{ID: fmt.Sprintf("%s-%d", name, len(d.Bags)+1)}
		if rel > 0 {
			b.ID = f[rel-1]
		}
		rows := strings.Split(f[rel], "\n")
		if sparseRows(rows) {
			if b.Sparse, err = readSparseInstances(rows, dim); err != nil {
				return nil, lineError(ln, "bag %s %v", b.ID, err)
			}
			rows = nil
		}
		for k, row := range rows {
			row = strings.TrimSpace(row)
			if row == "" {
				continue
			}
			v := strings.Split(row, ",")
			if len(v) != dim {
				return nil, lineError(ln, "bag %s instance %d has %d values, want %d", b.ID, k+1, len(v), dim)
			}
			x := make([]float64, dim)
			for j, s := range v {
				if x[j], err = parseFeature(s); err != nil {
					return nil, lineError(ln, "bag %s instance %d: %v", b.ID, k+1, err)
				}
			}
			b.Instances = append(b.Instances, x)
		}
		if b.Len() == 0 {
			return nil, lineError(ln, "bag %s has no instances", b.ID)
		}
		if b.Labels, err = binaryLabels(f, labelCols, labels); err != nil {
			return nil, lineError(ln, "bag %s: %v", b.ID, err)
		}
		d.Bags = append(d.Bags, b)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", ln+1, err)
	}
	if len(d.Bags) == 0 {
		return nil, fmt.Errorf("%w: no bags in @data", ErrFormat)
	}
	return d, nil
}

// attrIndices returns the attribute index of each label name.
func attrIndices(attrs []arffAttr, labels []string) ([]int, error) {
	cols := make([]int, len(labels))
	for k, l := range labels {
		i := slices.IndexFunc(attrs, func(a arffAttr) bool { return a.name == l })
		if i < 0 {
			return nil, fmt.Errorf("%w: label %q is not an attribute", ErrFormat, l)
		}
		cols[k] = i
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%w: no label attributes", ErrFormat)
	}
	return cols, nil
}

// binaryLabels reads the 0/1 label columns of a row as a label set.
func binaryLabels(f []string, cols []int, labels []string) ([]int, error) {
	set := []int{}
	for c, col := range cols {
		switch strings.TrimSpace(f[col]) {
		case "1":
			set = append(set, c)
		case "0":
		default:
			return nil, fmt.Errorf("label %s is %q, want 0 or 1", labels[c], f[col])
		}
	}
	return set, nil
}

// readFlatARFF reads a Mulan multi-label ARFF without a relational
// attribute, such as Corel5k, whose feature attributes flag the presence of
// a discrete token (a blob cluster). Each present token becomes one
// instance, one-hot over the feature attributes, as FORMATS.md prescribes
// for using such data as MIML. Rows may be dense or sparse
// ({index value, ...} with 0-based attribute indices, absent meaning 0).
func readFlatARFF(sc *bufio.Scanner, ln int, attrs []arffAttr, labels []string, name string) (*mil.Dataset, error) {
	labelCols, err := attrIndices(attrs, labels)
	if err != nil {
		return nil, err
	}
	featOf := make([]int, len(attrs)) // attribute index -> feature index, or -1
	dim := 0
	for i := range attrs {
		featOf[i] = -1
		if !slices.Contains(labelCols, i) {
			featOf[i] = dim
			dim++
		}
	}
	if dim == 0 {
		return nil, fmt.Errorf("%w: no feature attributes besides the labels", ErrFormat)
	}
	d := &mil.Dataset{Name: name, Classes: labels, Dim: dim}
	vals := make([]string, len(attrs))
	for sc.Scan() {
		ln++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '%' {
			continue
		}
		if line[0] == '{' {
			if !strings.HasSuffix(line, "}") {
				return nil, lineError(ln, "sparse row without a closing brace")
			}
			for i := range vals {
				vals[i] = "0"
			}
			body := strings.TrimSpace(line[1 : len(line)-1])
			if body != "" {
				for _, pair := range strings.Split(body, ",") {
					is, v, ok := strings.Cut(strings.TrimSpace(pair), " ")
					i, err := strconv.Atoi(is)
					if !ok || err != nil || i < 0 || i >= len(attrs) {
						return nil, lineError(ln, "sparse pair %q is not \"index value\" with index in 0..%d", pair, len(attrs)-1)
					}
					vals[i] = strings.TrimSpace(v)
				}
			}
		} else {
			f, err := splitARFFRow(line)
			if err != nil {
				return nil, lineError(ln, "%v", err)
			}
			if len(f) != len(attrs) {
				return nil, lineError(ln, "%d values, want %d attributes", len(f), len(attrs))
			}
			copy(vals, f)
		}
		b := mil.Bag{ID: fmt.Sprintf("%s-%d", name, len(d.Bags)+1)}
		for i, v := range vals {
			if featOf[i] < 0 {
				continue
			}
			x, err := parseFeature(v)
			if err != nil {
				return nil, lineError(ln, "attribute %s: %v", attrs[i].name, err)
			}
			if x != 0 {
				inst := make([]float64, dim)
				inst[featOf[i]] = 1
				b.Instances = append(b.Instances, inst)
			}
		}
		if len(b.Instances) == 0 {
			return nil, lineError(ln, "bag %s has no present feature, hence no instance", b.ID)
		}
		if b.Labels, err = binaryLabels(vals, labelCols, labels); err != nil {
			return nil, lineError(ln, "bag %s: %v", b.ID, err)
		}
		d.Bags = append(d.Bags, b)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", ln+1, err)
	}
	if len(d.Bags) == 0 {
		return nil, fmt.Errorf("%w: no bags in @data", ErrFormat)
	}
	return d, nil
}

// splitAttr splits "name type" of an @attribute line; the name may be quoted.
func splitAttr(s string) (name, typ string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", "", errors.New("@attribute without a name")
	}
	if q := s[0]; q == '\'' || q == '"' {
		end := strings.IndexByte(s[1:], q)
		if end < 0 {
			return "", "", errors.New("unterminated quoted attribute name")
		}
		name, s = s[1:1+end], s[2+end:]
	} else {
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			return "", "", fmt.Errorf("@attribute %s without a type", s)
		}
		name, s = s[:i], s[i:]
	}
	typ = strings.TrimSpace(s)
	if typ == "" {
		return "", "", fmt.Errorf("@attribute %s without a type", name)
	}
	if typ[0] != '{' {
		typ = strings.ToLower(strings.Fields(typ)[0])
	}
	return name, typ, nil
}

// splitARFFRow splits a data row on commas outside quotes, unquoting quoted
// values and undoing Weka's backslash escapes (\n, \t, \r, \\, \', \").
func splitARFFRow(line string) ([]string, error) {
	var (
		fields []string
		cur    strings.Builder
		quote  byte
		quoted bool // the current field was quoted
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == '\\':
			if i+1 == len(line) {
				return nil, errors.New("backslash at end of line")
			}
			i++
			switch e := line[i]; e {
			case 'n':
				cur.WriteByte('\n')
			case 't':
				cur.WriteByte('\t')
			case 'r':
				cur.WriteByte('\r')
			default:
				cur.WriteByte(e)
			}
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			if quoted || strings.TrimSpace(cur.String()) != "" {
				return nil, fmt.Errorf("quote in the middle of field %d", len(fields)+1)
			}
			cur.Reset()
			quote, quoted = c, true
		case c == ',':
			fields = append(fields, fieldValue(&cur, quoted))
			quoted = false
		default:
			if quoted {
				if c != ' ' && c != '\t' {
					return nil, fmt.Errorf("text after the closing quote of field %d", len(fields)+1)
				}
				continue
			}
			cur.WriteByte(c)
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in field %d", len(fields)+1)
	}
	return append(fields, fieldValue(&cur, quoted)), nil
}

func fieldValue(b *strings.Builder, quoted bool) string {
	s := b.String()
	b.Reset()
	if quoted {
		return s
	}
	return strings.TrimSpace(s)
}

// LoadARFF reads path with the Mulan label file beside it (same base name,
// .xml) when there is one.
func LoadARFF(path string) (*mil.Dataset, error) {
	var labels []string
	xmlPath := strings.TrimSuffix(path, filepath.Ext(path)) + ".xml"
	if xf, err := os.Open(xmlPath); err == nil {
		labels, err = ReadMulanXML(xf)
		xf.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", xmlPath, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return textLoad(path, func(r io.Reader, name string) (*mil.Dataset, error) { return ReadARFF(r, labels, name) })
}

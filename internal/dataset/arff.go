package dataset

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
	if rel < 0 || len(attrs[rel].relational) == 0 {
		return nil, fmt.Errorf("%w: no relational attribute with numeric members: not a multi-instance ARFF", ErrFormat)
	}
	dim := len(attrs[rel].relational)
	var labelCols []int
	if labels == nil {
		for i := rel + 1; i < len(attrs); i++ {
			labels = append(labels, attrs[i].name)
			labelCols = append(labelCols, i)
		}
	} else {
		for _, l := range labels {
			i := slices.IndexFunc(attrs, func(a arffAttr) bool { return a.name == l })
			if i < 0 {
				return nil, fmt.Errorf("%w: label %q of the XML is not an attribute", ErrFormat, l)
			}
			labelCols = append(labelCols, i)
		}
	}
	if len(labelCols) == 0 {
		return nil, fmt.Errorf("%w: no label attributes", ErrFormat)
	}

	d := &mil.Dataset{Name: name, Classes: labels, Dim: dim}
	for sc.Scan() {
		ln++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '%' {
			continue
		}
		if line[0] == '{' {
			return nil, lineError(ln, "sparse ARFF rows are not supported")
		}
		f, err := splitARFFRow(line)
		if err != nil {
			return nil, lineError(ln, "%v", err)
		}
		if len(f) != len(attrs) {
			return nil, lineError(ln, "%d values, want %d attributes", len(f), len(attrs))
		}
		b := mil.Bag{ID: fmt.Sprintf("%s-%d", name, len(d.Bags)+1), Labels: []int{}}
		if rel > 0 {
			b.ID = f[rel-1]
		}
		for k, row := range strings.Split(f[rel], "\n") {
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
		if len(b.Instances) == 0 {
			return nil, lineError(ln, "bag %s has no instances", b.ID)
		}
		for c, col := range labelCols {
			switch strings.TrimSpace(f[col]) {
			case "1":
				b.Labels = append(b.Labels, c)
			case "0":
			default:
				return nil, lineError(ln, "label %s is %q, want 0 or 1", labels[c], f[col])
			}
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

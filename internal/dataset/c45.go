package dataset

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// c45Names is what the reader needs from a C4.5 .names file.
type c45Names struct {
	classes  []string
	attrs    []string // attribute names in order
	features []int    // indices into attrs of the continuous attributes
	bagAttr  int      // index of the attribute naming the bag
	positive string   // class value of a positive instance
}

// readC45Names parses a C4.5 .names file: the class list on the first
// statement ("0,1."), then one "name: type." statement per line, where type
// is "continuous" or a list of discrete values. "|" starts a comment. The
// first attribute names the bag (misvm's molecule_name); continuous
// attributes are the features and other discrete ones are ignored.
func readC45Names(r io.Reader) (*c45Names, error) {
	nm := &c45Names{bagAttr: -1}
	sc := newLineScanner(r)
	ln := 0
	for sc.Scan() {
		ln++
		line := sc.Text()
		if i := strings.IndexByte(line, '|'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		line = strings.TrimSpace(strings.TrimSuffix(line, "."))
		if nm.classes == nil {
			for _, c := range strings.Split(line, ",") {
				nm.classes = append(nm.classes, strings.TrimSpace(c))
			}
			continue
		}
		name, typ, ok := strings.Cut(line, ":")
		if !ok {
			return nil, lineError(ln, "attribute statement %q has no colon", truncate(line))
		}
		name = strings.TrimSpace(name)
		// misvm annotates types ("continuous scale=0.001"); the annotation is
		// a display hint and the features are kept raw, as in the file.
		if fs := strings.Fields(typ); len(fs) > 0 && (fs[0] == "continuous" || fs[0] == "ignore") {
			typ = fs[0]
		}
		switch {
		case typ == "continuous":
			nm.features = append(nm.features, len(nm.attrs))
		case typ == "ignore":
		case nm.bagAttr < 0:
			nm.bagAttr = len(nm.attrs)
		}
		nm.attrs = append(nm.attrs, name)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", ln+1, err)
	}
	if len(nm.classes) != 2 {
		return nil, fmt.Errorf("%w: %d classes %q, a multi-instance C4.5 file has two", ErrFormat, len(nm.classes), nm.classes)
	}
	if nm.bagAttr < 0 {
		return nil, fmt.Errorf("%w: no discrete attribute to name the bags", ErrFormat)
	}
	if len(nm.features) == 0 {
		return nil, fmt.Errorf("%w: no continuous attributes", ErrFormat)
	}
	// misvm writes "0,1."; "1" is the positive (musk) class. Otherwise the
	// C4.5 convention of the second class being the positive one applies.
	nm.positive = nm.classes[1]
	if slices.Contains(nm.classes, "1") {
		nm.positive = "1"
	}
	return nm, nil
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// ReadC45 reads a multi-instance C4.5 data set from its .names and .data
// streams. Each data line is the attribute values then the class, with an
// optional trailing period; a bag is positive when any instance is.
func ReadC45(names, data io.Reader, name string) (*mil.Dataset, error) {
	nm, err := readC45Names(names)
	if err != nil {
		return nil, fmt.Errorf("names: %w", err)
	}
	return readC45Data(nm, data, name)
}

func readC45Data(nm *c45Names, data io.Reader, name string) (*mil.Dataset, error) {
	var (
		g   bagGrouper
		err error
	)
	sc := newLineScanner(data)
	ln := 0
	for sc.Scan() {
		ln++
		line := sc.Text()
		if i := strings.IndexByte(line, '|'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(strings.TrimSuffix(line, "."), ",")
		if len(f) != len(nm.attrs)+1 {
			return nil, lineError(ln, "%d fields, want %d attributes and the class", len(f), len(nm.attrs))
		}
		class := strings.TrimSpace(f[len(f)-1])
		if !slices.Contains(nm.classes, class) {
			return nil, lineError(ln, "class %q not in %q", class, nm.classes)
		}
		x := make([]float64, len(nm.features))
		for k, j := range nm.features {
			if x[k], err = parseFeature(f[j]); err != nil {
				return nil, lineError(ln, "attribute %s: %v", nm.attrs[j], err)
			}
		}
		b := &g.bags[g.bag(strings.TrimSpace(f[nm.bagAttr]))]
		b.Instances = append(b.Instances, x)
		if class == nm.positive && len(b.Labels) == 0 {
			b.Labels = []int{0}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", ln+1, err)
	}
	if len(g.bags) == 0 {
		return nil, fmt.Errorf("%w: no instances", ErrFormat)
	}
	return &mil.Dataset{Name: name, Classes: binaryClasses(), Dim: len(nm.features), Bags: g.bags}, nil
}

// LoadC45 reads path (a .data file) with the .names file beside it.
func LoadC45(path string) (*mil.Dataset, error) {
	namesPath := strings.TrimSuffix(path, filepath.Ext(path)) + ".names"
	nf, err := os.Open(namesPath)
	if err != nil {
		return nil, err
	}
	defer nf.Close()
	df, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer df.Close()
	nm, err := readC45Names(nf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", namesPath, err)
	}
	d, err := readC45Data(nm, df, datasetName(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

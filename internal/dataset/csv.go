package dataset

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// CSV column names; see the package documentation for the layout.
const (
	csvBagCol      = "bag_id"
	csvLabelsCol   = "labels"
	csvInstanceCol = "instance_label"
)

// ReadCSV reads the project's CSV instance format (one instance per row,
// header row first) into a dataset called name.
func ReadCSV(r io.Reader, name string) (*mil.Dataset, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: empty file, want a header row", ErrFormat)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	header = slices.Clone(header) // ReuseRecord: the next Read overwrites it
	bagCol, labCol, instCol := -1, -1, -1
	var classes []string
	var feats []int
	for i, h := range header {
		h = strings.TrimSpace(h)
		switch {
		case h == csvBagCol:
			bagCol = i
		case h == csvLabelsCol || strings.HasPrefix(h, csvLabelsCol+":"):
			labCol = i
			if _, voc, ok := strings.Cut(h, ":"); ok && voc != "" {
				classes = strings.Split(voc, ";")
			}
		case h == csvInstanceCol:
			instCol = i
		default:
			feats = append(feats, i)
		}
	}
	if bagCol < 0 {
		return nil, fmt.Errorf("line 1: %w: no %q column", ErrFormat, csvBagCol)
	}
	if len(feats) == 0 {
		return nil, fmt.Errorf("line 1: %w: no feature columns", ErrFormat)
	}
	var (
		g        bagGrouper
		labelSet = map[int]string{} // raw labels cell of each bag, to check rows agree
		maxLabel = -1
	)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// csv.ParseError already names the line (and the ragged row).
			return nil, fmt.Errorf("%w: %w", ErrFormat, err)
		}
		ln, _ := cr.FieldPos(0)
		id := strings.TrimSpace(rec[bagCol])
		if id == "" {
			return nil, lineError(ln, "empty %s", csvBagCol)
		}
		bi := g.bag(id)
		b := &g.bags[bi]
		if labCol >= 0 {
			cell := strings.TrimSpace(rec[labCol])
			if prev, seen := labelSet[bi]; seen && prev != cell {
				return nil, lineError(ln, "bag %s: labels %q differ from %q on an earlier row", id, cell, prev)
			} else if !seen {
				labelSet[bi] = cell
				if b.Labels, err = parseLabelCell(cell); err != nil {
					return nil, lineError(ln, "bag %s: %v", id, err)
				}
				for _, l := range b.Labels {
					maxLabel = max(maxLabel, l)
				}
			}
		} else {
			b.Labels = nil
		}
		if instCol >= 0 {
			cell := strings.TrimSpace(rec[instCol])
			l := mil.Unlabeled
			if cell != "" {
				if l, err = strconv.Atoi(cell); err != nil || l < mil.Unlabeled {
					return nil, lineError(ln, "bag %s: instance label %q is not a class index", id, cell)
				}
			}
			if len(b.InstanceLabels) != len(b.Instances) {
				return nil, lineError(ln, "bag %s: instance_label missing on some of its rows", id)
			}
			b.InstanceLabels = append(b.InstanceLabels, l)
			maxLabel = max(maxLabel, l)
		}
		x := make([]float64, len(feats))
		for k, j := range feats {
			if x[k], err = parseFeature(rec[j]); err != nil {
				return nil, lineError(ln, "column %q: %v", header[j], err)
			}
		}
		b.Instances = append(b.Instances, x)
	}
	if len(g.bags) == 0 {
		return nil, fmt.Errorf("%w: no rows after the header", ErrFormat)
	}
	if classes == nil {
		classes = numberedClasses(maxLabel + 1)
	}
	if maxLabel >= len(classes) {
		return nil, fmt.Errorf("%w: label %d outside the %d classes of the header", ErrFormat, maxLabel, len(classes))
	}
	// A bag whose instance labels are all unknown carries none.
	for i := range g.bags {
		b := &g.bags[i]
		if !slices.ContainsFunc(b.InstanceLabels, func(l int) bool { return l != mil.Unlabeled }) {
			b.InstanceLabels = nil
		}
	}
	d := &mil.Dataset{Name: name, Classes: classes, Dim: len(feats), Bags: g.bags}
	for i := range d.Bags {
		if err := d.Bags[i].Validate(d.Dim, len(d.Classes)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFormat, err)
		}
	}
	return d, nil
}

// parseLabelCell parses "1;4" (a label set), "" (the empty set) or "?" (unlabeled).
func parseLabelCell(cell string) ([]int, error) {
	switch cell {
	case "?":
		return nil, nil
	case "":
		return []int{}, nil
	}
	parts := strings.Split(cell, ";")
	out := make([]int, 0, len(parts))
	for _, p := range parts {
		l, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || l < 0 {
			return nil, fmt.Errorf("label %q is not a class index", p)
		}
		out = append(out, l)
	}
	return normLabels(out), nil
}

// LoadCSV reads a CSV file (see ReadCSV).
func LoadCSV(path string) (*mil.Dataset, error) {
	return textLoad(path, ReadCSV)
}

// WriteCSV writes d in the CSV instance format. Class names must not
// contain ';' (it separates them in the labels header).
func WriteCSV(w io.Writer, d *mil.Dataset) error {
	d = d.Densified() // the format has dense instances only
	for _, c := range d.Classes {
		if strings.Contains(c, ";") {
			return fmt.Errorf("class %q contains ';'", c)
		}
	}
	withInst := false
	for i := range d.Bags {
		if d.Bags[i].InstanceLabels != nil {
			withInst = true
			break
		}
	}
	cw := csv.NewWriter(w)
	header := []string{csvBagCol, csvLabelsCol + ":" + strings.Join(d.Classes, ";")}
	if len(d.Classes) == 0 {
		header[1] = csvLabelsCol
	}
	if withInst {
		header = append(header, csvInstanceCol)
	}
	for j := range d.Dim {
		header = append(header, "f"+strconv.Itoa(j+1))
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	rec := make([]string, 0, len(header))
	for i := range d.Bags {
		b := &d.Bags[i]
		labels := "?"
		if b.Labels != nil {
			s := make([]string, len(b.Labels))
			for k, l := range b.Labels {
				s[k] = strconv.Itoa(l)
			}
			labels = strings.Join(s, ";")
		}
		for k, x := range b.Instances {
			if len(x) != d.Dim {
				return fmt.Errorf("bag %q instance %d: %w (got %d, want %d)", b.ID, k, mil.ErrDimension, len(x), d.Dim)
			}
			rec = append(rec[:0], b.ID, labels)
			if withInst {
				l := mil.Unlabeled
				if b.InstanceLabels != nil {
					l = b.InstanceLabels[k]
				}
				rec = append(rec, strconv.Itoa(l))
			}
			for _, v := range x {
				rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// SaveCSV writes d to path (see WriteCSV).
func SaveCSV(path string, d *mil.Dataset) error {
	return saveFile(path, d, WriteCSV)
}

package dataset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mimlstream/mimlstream/internal/dataset/mat"
	"github.com/mimlstream/mimlstream/internal/mil"
)

// ErrFormat marks a file that is malformed or in an unsupported format.
var ErrFormat = errors.New("malformed dataset")

// Load reads the data set at path, choosing the reader from the file name
// (see the package documentation). The dataset's Name is the file's base
// name without extension, or the directory's name for the generic
// "newlabels.mat" of Pham et al.
func Load(path string) (*mil.Dataset, error) {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".mat":
		vars, err := readMAT(path)
		if err != nil {
			return nil, err
		}
		switch {
		case vars["Bags"] != nil:
			d, _, err := mscv2FromVars(path, vars)
			return d, err
		case vars["X"] != nil && vars["y"] != nil && vars["Y"] != nil:
			return phamFromVars(path, vars)
		}
		return nil, fmt.Errorf("%s: %w: MAT-file has neither Bags (MSCV2) nor X, y, Y (Pham); variables: %s",
			path, ErrFormat, strings.Join(varNames(vars), ", "))
	case ".arff":
		return LoadARFF(path)
	case ".data":
		names := strings.TrimSuffix(path, filepath.Ext(path)) + ".names"
		if _, err := os.Stat(names); err == nil {
			return LoadC45(path)
		}
		return LoadMILL(path)
	case ".jsonl", ".ndjson":
		return LoadJSONL(path)
	case ".csv":
		return LoadCSV(path)
	}
	return nil, fmt.Errorf("%s: %w: unknown extension %q (want .mat, .arff, .data, .jsonl, .ndjson or .csv)", path, ErrFormat, ext)
}

// datasetName derives a dataset name from a file path.
func datasetName(path string) string {
	base := filepath.Base(path)
	name := strings.TrimSuffix(base, filepath.Ext(base))
	if name == "newlabels" {
		if dir := filepath.Base(filepath.Dir(path)); dir != "." && dir != string(filepath.Separator) {
			return dir
		}
	}
	return name
}

func readMAT(path string) (map[string]*mat.Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars, err := mat.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrFormat, err)
	}
	return vars, nil
}

func varNames(vars map[string]*mat.Array) []string {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// numberedClasses returns the names c0..c(k-1).
func numberedClasses(k int) []string {
	c := make([]string, k)
	for i := range c {
		c[i] = fmt.Sprintf("c%d", i)
	}
	return c
}

// binaryClasses is the vocabulary of a binary MIL data set.
func binaryClasses() []string { return []string{"positive"} }

// normLabels sorts and deduplicates a label set in place, keeping nil nil.
func normLabels(l []int) []int {
	if l == nil {
		return nil
	}
	sort.Ints(l)
	out := l[:0]
	for i, v := range l {
		if i == 0 || v != l[i-1] {
			out = append(out, v)
		}
	}
	return out
}

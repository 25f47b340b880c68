package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
)

func testdata(p string) string { return filepath.Join("..", "..", "testdata", p) }

// TestLoadCounts checks every loader on the real files against the counts in
// testdata/FORMATS.md and the papers.
func TestLoadCounts(t *testing.T) {
	tests := []struct {
		path                 string
		name                 string
		bags, insts, dim     int
		classes              []string // nil: only the count is checked
		nClasses             int
		positive             int // bags with a non-empty label set
		instanceLabels       bool
		minBagSize, maxBagSz int
	}{
		{"mscv2/MSCV2.mat", "MSCV2", 591, 1758, 48, nil, 23, 591, true, 1, 0},
		{"letter_frost_pham_novelclass/newlabels.mat", "letter_frost_pham_novelclass", 141, 562, 16, nil, 21, 141, true, 1, 0},
		{"miml_image_zhou/miml_03_data.arff", "miml_03_data", 2000, 18000, 15,
			[]string{"desert", "mountains", "sea", "sunset", "trees"}, 5, 2000, false, 9, 9},
		{"elephant/elephant.data", "elephant", 200, 1391, 230, []string{"positive"}, 1, 100, false, 1, 0},
		{"fox/fox.data", "fox", 200, 1320, 230, []string{"positive"}, 1, 100, false, 1, 0},
		{"musk1/musk1.data", "musk1", 92, 476, 166, []string{"positive"}, 1, 47, false, 1, 0},
		{"musk1/musk1_mill.data", "musk1_mill", 92, 476, 166, []string{"positive"}, 1, 47, false, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Load(testdata(tt.path))
			if err != nil {
				t.Fatal(err)
			}
			if d.Name != tt.name {
				t.Errorf("Name = %q, want %q", d.Name, tt.name)
			}
			if len(d.Bags) != tt.bags || d.NumInstances() != tt.insts || d.Dim != tt.dim {
				t.Errorf("bags/instances/dim = %d/%d/%d, want %d/%d/%d",
					len(d.Bags), d.NumInstances(), d.Dim, tt.bags, tt.insts, tt.dim)
			}
			if len(d.Classes) != tt.nClasses || (tt.classes != nil && !slices.Equal(d.Classes, tt.classes)) {
				t.Errorf("Classes = %q, want %d classes %q", d.Classes, tt.nClasses, tt.classes)
			}
			if got := d.HasInstanceLabels(); got != tt.instanceLabels {
				t.Errorf("HasInstanceLabels = %v, want %v", got, tt.instanceLabels)
			}
			pos, ids := 0, map[string]bool{}
			for i := range d.Bags {
				b := &d.Bags[i]
				if err := b.Validate(d.Dim, len(d.Classes)); err != nil {
					t.Fatal(err)
				}
				if !b.Labeled() {
					t.Fatalf("bag %s unlabeled", b.ID)
				}
				if len(b.Labels) > 0 {
					pos++
				}
				if ids[b.ID] {
					t.Fatalf("duplicate bag ID %q", b.ID)
				}
				ids[b.ID] = true
				n := len(b.Instances)
				if n < tt.minBagSize || (tt.maxBagSz > 0 && n > tt.maxBagSz) {
					t.Fatalf("bag %s has %d instances, want %d..%d", b.ID, n, tt.minBagSize, tt.maxBagSz)
				}
			}
			if pos != tt.positive {
				t.Errorf("%d bags with labels, want %d (negative: %d)", pos, tt.positive, len(d.Bags)-pos)
			}
		})
	}
}

// TestMSCV2 checks the instance labels, the OR relation between instance and
// bag labels stated in FORMATS.md, and the paper's split.
func TestMSCV2(t *testing.T) {
	d, split, err := LoadMSCV2(testdata("mscv2/MSCV2.mat"))
	if err != nil {
		t.Fatal(err)
	}
	checkBagLabelsAreOR(t, d, len(d.Classes))
	if len(split.Train) != 532 || len(split.Test) != 59 {
		t.Fatalf("split %d/%d, want 532/59", len(split.Train), len(split.Test))
	}
	seen := make([]int, len(d.Bags))
	for _, i := range slices.Concat(split.Train, split.Test) {
		seen[i]++
	}
	for i, n := range seen {
		if n != 1 {
			t.Fatalf("bag %d appears %d times in trnidx+tstidx, want exactly once", i, n)
		}
	}
	// Features are in [0, 1] according to FORMATS.md.
	for _, b := range d.Bags {
		for _, x := range b.Instances {
			for _, v := range x {
				if v < 0 || v > 1 {
					t.Fatalf("bag %s feature %v outside [0,1]", b.ID, v)
				}
			}
		}
	}
}

// TestPhamFrost checks Letter Frost: the novel class is the last one, bag
// labels never contain it, and Y = OR over the known-class instance labels.
func TestPhamFrost(t *testing.T) {
	d, err := LoadPham(testdata("letter_frost_pham_novelclass/newlabels.mat"))
	if err != nil {
		t.Fatal(err)
	}
	c := len(d.Classes) - 1
	if c != 20 || d.Classes[c] != "unknown" {
		t.Fatalf("classes %q: want 20 known then novel", d.Classes)
	}
	checkBagLabelsAreOR(t, d, c)
	novel := 0
	for _, b := range d.Bags {
		if b.HasLabel(c) {
			t.Fatalf("bag %s carries the novel class in its weak label", b.ID)
		}
		for i, l := range b.InstanceLabels {
			if l == c {
				novel++
			}
			// Letter features are integers 0..15 (stored as uint8).
			for _, v := range b.Instances[i] {
				if v != float64(int(v)) || v < 0 || v > 15 {
					t.Fatalf("bag %s feature %v not an integer in 0..15", b.ID, v)
				}
			}
		}
	}
	if novel != 150 {
		t.Errorf("%d novel instances, want 150", novel)
	}

	// Frost also carries Y_backup, the bag labels including the novel
	// column: it must be the OR of all instance labels, novel included.
	vars, err := readMAT(testdata("letter_frost_pham_novelclass/newlabels.mat"))
	if err != nil {
		t.Fatal(err)
	}
	yb := vars["Y_backup"]
	if yb == nil || yb.Rows() != len(d.Bags) || yb.Cols() != c+1 {
		t.Fatalf("Y_backup missing or not %dx%d", len(d.Bags), c+1)
	}
	for i, b := range d.Bags {
		for k := 0; k <= c; k++ {
			if want := slices.Contains(b.InstanceLabels, k); (yb.At(i, k) == 1) != want {
				t.Fatalf("bag %s: Y_backup(:,%d) = %v, OR of instance labels says %v", b.ID, k+1, yb.At(i, k), want)
			}
		}
	}
}

// checkBagLabelsAreOR verifies that each bag's label set is the set of its
// instances' classes below known (the classes a bag label can hold).
func checkBagLabelsAreOR(t *testing.T, d *mil.Dataset, known int) {
	t.Helper()
	for _, b := range d.Bags {
		var or []int
		for _, l := range b.InstanceLabels {
			if l < known && !slices.Contains(or, l) {
				or = append(or, l)
			}
		}
		slices.Sort(or)
		if !slices.Equal(or, b.Labels) && !(len(or) == 0 && len(b.Labels) == 0) {
			t.Fatalf("bag %s: labels %v, OR of instance labels %v", b.ID, b.Labels, or)
		}
	}
}

// TestMuskC45MatchesMILL loads musk1 from the C4.5 (misvm) and MILL copies:
// both hold the raw UCI features, so the bags must be identical.
func TestMuskC45MatchesMILL(t *testing.T) {
	c45, err := Load(testdata("musk1/musk1.data"))
	if err != nil {
		t.Fatal(err)
	}
	mill, err := Load(testdata("musk1/musk1_mill.data"))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*mil.Bag{}
	for i := range mill.Bags {
		byID[mill.Bags[i].ID] = &mill.Bags[i]
	}
	for _, b := range c45.Bags {
		m := byID[b.ID]
		if m == nil {
			t.Fatalf("bag %s missing from the MILL file", b.ID)
		}
		if !slices.Equal(b.Labels, m.Labels) || len(b.Instances) != len(m.Instances) {
			t.Fatalf("bag %s: labels %v/%v, %d/%d instances", b.ID, b.Labels, m.Labels, len(b.Instances), len(m.Instances))
		}
		for i := range b.Instances {
			if !slices.Equal(b.Instances[i], m.Instances[i]) {
				t.Fatalf("bag %s instance %d differs", b.ID, i)
			}
		}
	}
}

func TestLoadUnknownExtension(t *testing.T) {
	_, err := Load("x.parquet")
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("err = %v, want ErrFormat", err)
	}
}

// BenchmarkLoad measures each reader on the real files; "readfile" is the
// baseline (the bytes alone), so the ratio shows the cost of parsing.
//
//	go test -run '^$' -bench Load -benchtime 20x ./internal/dataset/
func BenchmarkLoad(b *testing.B) {
	for _, p := range []string{
		"mscv2/MSCV2.mat",
		"miml_image_zhou/miml_03_data.arff",
		"elephant/elephant.data",
		"musk1/musk1.data",
	} {
		path := testdata(p)
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("readfile/"+filepath.Base(p), func(b *testing.B) {
			b.SetBytes(st.Size())
			for b.Loop() {
				if _, err := os.ReadFile(path); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("load/"+filepath.Base(p), func(b *testing.B) {
			b.SetBytes(st.Size())
			for b.Loop() {
				if _, err := Load(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The project's own formats, written from elephant (the largest set).
	d, err := Load(testdata("elephant/elephant.data"))
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range []struct {
		ext  string
		save func(string, *mil.Dataset) error
	}{{".jsonl", SaveJSONL}, {".csv", SaveCSV}} {
		path := filepath.Join(b.TempDir(), "elephant"+f.ext)
		if err := f.save(path, d); err != nil {
			b.Fatal(err)
		}
		st, _ := os.Stat(path)
		b.Run("load/elephant"+f.ext, func(b *testing.B) {
			b.SetBytes(st.Size())
			for b.Loop() {
				if _, err := Load(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package dataset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// sameDataset compares two datasets exactly, keeping nil and empty label
// sets apart.
func sameDataset(t *testing.T, got, want *mil.Dataset) {
	t.Helper()
	if got.Name != want.Name || got.Dim != want.Dim || !slices.Equal(got.Classes, want.Classes) || len(got.Bags) != len(want.Bags) {
		t.Fatalf("got %q dim %d classes %q %d bags, want %q dim %d classes %q %d bags",
			got.Name, got.Dim, got.Classes, len(got.Bags), want.Name, want.Dim, want.Classes, len(want.Bags))
	}
	for i := range want.Bags {
		g, w := &got.Bags[i], &want.Bags[i]
		if g.ID != w.ID || (g.Labels == nil) != (w.Labels == nil) || !slices.Equal(g.Labels, w.Labels) ||
			!slices.Equal(g.InstanceLabels, w.InstanceLabels) || len(g.Instances) != len(w.Instances) {
			t.Fatalf("bag %d: got %s %#v %v (%d inst), want %s %#v %v (%d inst)", i,
				g.ID, g.Labels, g.InstanceLabels, len(g.Instances), w.ID, w.Labels, w.InstanceLabels, len(w.Instances))
		}
		for k := range w.Instances {
			if !slices.Equal(g.Instances[k], w.Instances[k]) {
				t.Fatalf("bag %s instance %d: %v, want %v", w.ID, k, g.Instances[k], w.Instances[k])
			}
		}
	}
}

// toyDataset exercises what the writers must keep: unlabeled (nil) and
// negative (empty) label sets, partial instance labels, awkward floats.
func toyDataset() *mil.Dataset {
	return &mil.Dataset{
		Name:    "toy",
		Classes: []string{"desert", "sea", "with,comma"},
		Dim:     3,
		Bags: []mil.Bag{
			{ID: "a", Instances: [][]float64{{1, 2, 3}, {0.1, -1e-300, 1e300}}, Labels: []int{0, 2}, InstanceLabels: []int{0, 2}},
			{ID: "b,quoted \"id\"", Instances: [][]float64{{math.Pi, math.SmallestNonzeroFloat64, -0.5}}, Labels: []int{}},
			{ID: "c", Instances: [][]float64{{4, 5, 6}, {7, 8, 9}}, InstanceLabels: []int{mil.Unlabeled, 1}},
			{ID: "d", Instances: [][]float64{{0, 0, 0}}, Labels: []int{1}},
		},
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	for _, d := range []*mil.Dataset{toyDataset(), mustLoad(t, "mscv2/MSCV2.mat"), mustLoad(t, "musk1/musk1.data")} {
		t.Run(d.Name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteJSONL(&buf, d); err != nil {
				t.Fatal(err)
			}
			got, err := ReadJSONL(&buf, "ignored: the header names it")
			if err != nil {
				t.Fatal(err)
			}
			sameDataset(t, got, d)
		})
	}
}

func TestCSVRoundTrip(t *testing.T) {
	for _, d := range []*mil.Dataset{toyDataset(), mustLoad(t, "letter_frost_pham_novelclass/newlabels.mat"), mustLoad(t, "fox/fox.data")} {
		t.Run(d.Name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteCSV(&buf, d); err != nil {
				t.Fatal(err)
			}
			got, err := ReadCSV(&buf, d.Name)
			if err != nil {
				t.Fatal(err)
			}
			// A bag's partial instance labels survive; a bag without any
			// known instance label reads back as nil, as written.
			sameDataset(t, got, d)
		})
	}
}

// TestSaveAndLoad goes through files so that Load's sniffing is covered.
func TestSaveAndLoad(t *testing.T) {
	dir := t.TempDir()
	d := toyDataset()
	for _, ext := range []string{".jsonl", ".csv"} {
		p := filepath.Join(dir, "toy"+ext)
		save := map[string]func(string, *mil.Dataset) error{".jsonl": SaveJSONL, ".csv": SaveCSV}[ext]
		if err := save(p, d); err != nil {
			t.Fatal(err)
		}
		got, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		sameDataset(t, got, d)
	}
}

func mustLoad(t *testing.T, p string) *mil.Dataset {
	t.Helper()
	d, err := Load(testdata(p))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestJSONLWithoutHeader(t *testing.T) {
	in := `
{"id":"x","instances":[[1,2]],"labels":[3,1,3]}

{"id":"y","instances":[[3,4],[5,6]],"instance_labels":[0,-1]}
{"id":"z","instances":[[7,8]],"labels":[]}
`
	d, err := ReadJSONL(strings.NewReader(in), "plain")
	if err != nil {
		t.Fatal(err)
	}
	want := &mil.Dataset{Name: "plain", Classes: []string{"c0", "c1", "c2", "c3"}, Dim: 2, Bags: []mil.Bag{
		{ID: "x", Instances: [][]float64{{1, 2}}, Labels: []int{1, 3}},
		{ID: "y", Instances: [][]float64{{3, 4}, {5, 6}}, InstanceLabels: []int{0, -1}},
		{ID: "z", Instances: [][]float64{{7, 8}}, Labels: []int{}},
	}}
	sameDataset(t, d, want)
}

func TestScanJSONL(t *testing.T) {
	var buf bytes.Buffer
	d := mustLoad(t, "mscv2/MSCV2.mat")
	if err := WriteJSONL(&buf, d); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	var ids []string
	if err := ScanJSONL(context.Background(), bytes.NewReader(raw), func(b mil.Bag) error {
		ids = append(ids, b.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(d.Bags) || ids[0] != d.Bags[0].ID || ids[len(ids)-1] != d.Bags[len(d.Bags)-1].ID {
		t.Fatalf("scanned %d bags, want %d in order", len(ids), len(d.Bags))
	}
	// fn's error stops the scan and comes back unchanged.
	stop := errors.New("stop")
	n := 0
	err := ScanJSONL(context.Background(), bytes.NewReader(raw), func(mil.Bag) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("err = %v after %d bags, want stop after 3", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ScanJSONL(ctx, bytes.NewReader(raw), func(mil.Bag) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled scan: err = %v", err)
	}
}

func TestMalformed(t *testing.T) {
	const hdr = `{"format":"mimlstream.bags/v1","classes":["a","b"],"dim":2}` + "\n"
	const arffHead = "@relation r\n@attribute id {1,2}\n@attribute bag relational\n @attribute f1 numeric\n @attribute f2 numeric\n@end bag\n@attribute l1 {0,1}\n@data\n"
	tests := []struct {
		name   string
		read   func(string) (*mil.Dataset, error)
		in     string
		wantIn string  // substring of the message
		wantIs []error // errors.Is targets besides ErrFormat
	}{
		{"jsonl bad json", jsonl, hdr + `{"id":"x","instances":[[1,2]]` + "\n", "line 2", nil},
		{"jsonl wrong dim", jsonl, hdr + `{"id":"x","instances":[[1,2,3]]}`, "line 2", []error{mil.ErrDimension}},
		{"jsonl ragged bag", jsonl, `{"id":"x","instances":[[1,2],[3]]}`, "line 1", []error{mil.ErrDimension}},
		{"jsonl label out of range", jsonl, hdr + `{"id":"x","instances":[[1,2]],"labels":[2]}`, "line 2", []error{mil.ErrLabelRange}},
		{"jsonl negative label", jsonl, `{"id":"x","instances":[[1,2]],"labels":[-1]}`, "line 1", []error{mil.ErrLabelRange}},
		{"jsonl empty bag", jsonl, `{"id":"x","instances":[]}`, "line 1", []error{mil.ErrEmptyBag}},
		{"jsonl no id", jsonl, `{"instances":[[1]]}`, "without an id", nil},
		{"jsonl instance labels mismatch", jsonl, `{"id":"x","instances":[[1]],"instance_labels":[0,1]}`, "line 1", []error{mil.ErrInstanceMeta}},
		{"jsonl unknown header", jsonl, `{"format":"other/v9"}`, "line 1", nil},
		{"jsonl empty", jsonl, "\n\n", "no bags", nil},
		{"csv ragged row", csvRead, "bag_id,f1,f2\na,1,2\na,3\n", "line 3", nil},
		{"csv not a number", csvRead, "bag_id,f1,f2\na,1,x\n", `line 2: malformed dataset: column "f2"`, nil},
		{"csv NaN", csvRead, "bag_id,f1\na,NaN\n", "line 2", nil},
		{"csv no bag column", csvRead, "id,f1\na,1\n", "bag_id", nil},
		{"csv labels disagree", csvRead, "bag_id,labels,f1\na,0,1\na,1,2\n", "line 3", nil},
		{"csv bad label", csvRead, "bag_id,labels,f1\na,x,1\n", "line 2", nil},
		{"csv label beyond vocabulary", csvRead, "bag_id,labels:p;q,f1\na,2,1\n", "label 2", nil},
		{"csv empty", csvRead, "", "header", nil},
		{"arff bad line", arff, arffHead + "1,\"1,2\\n3,4\",1\n2,\"1,2\\n3\",0\n", "line 10", nil},
		{"arff unterminated quote", arff, arffHead + "1,\"1,2\\n3,4,1\n", "line 9", nil},
		{"arff bad label", arff, arffHead + "1,\"1,2\",2\n", "line 9", nil},
		{"arff no data", arff, "@relation r\n@attribute f numeric\n", "@data", nil},
		{"arff not relational", arff, "@relation r\n@attribute f numeric\n@data\n1\n", "relational", nil},
		{"arff too few values", arff, arffHead + "1,\"1,2\"\n", "line 9", nil},
		{"mill bad label", mill, "i1,b1,2,1,2\n", "line 1", nil},
		{"mill ragged", mill, "i1,b1,1,1,2\ni2,b1,1,1\n", "line 2", nil},
		{"mill mixed sparse", mill, "i1,b1,1,1:2\ni2,b1,1,1,2\n", "line 2", nil},
		{"mill bad sparse index", mill, "i1,b1,1,0:2\n", "line 1", nil},
		{"mill too short", mill, "i1,b1\n", "line 1", nil},
		{"mill dense then featureless", mill, "i1,b1,1,1,2\ni2,b1,1,\n", "line 2", nil},
		{"mill empty", mill, "", "no instances", nil},
		{"c45 wrong field count", c45, "i1,1,2,1.\n", "line 1", nil},
		{"c45 unknown class", c45, "m1,i1,1,2,3.\n", "class", nil},
		{"c45 names one class", func(s string) (*mil.Dataset, error) {
			return ReadC45(strings.NewReader("1.\nmol: m1.\nf1: continuous.\n"), strings.NewReader(s), "t")
		}, "m1,1,1.\n", "classes", nil},
		{"c45 names no colon", func(s string) (*mil.Dataset, error) {
			return ReadC45(strings.NewReader("0,1.\nmol m1.\n"), strings.NewReader(s), "t")
		}, "m1,1,1.\n", "line 2", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.read(tt.in)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("err = %v, does not wrap ErrFormat", err)
			}
			for _, target := range tt.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("err = %v, does not wrap %v", err, target)
				}
			}
			if !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("err = %q, want it to mention %q", err, tt.wantIn)
			}
		})
	}
}

func jsonl(s string) (*mil.Dataset, error)   { return ReadJSONL(strings.NewReader(s), "t") }
func csvRead(s string) (*mil.Dataset, error) { return ReadCSV(strings.NewReader(s), "t") }
func arff(s string) (*mil.Dataset, error)    { return ReadARFF(strings.NewReader(s), nil, "t") }
func mill(s string) (*mil.Dataset, error)    { return ReadMILL(strings.NewReader(s), "t", 0) }
func c45(s string) (*mil.Dataset, error) {
	return ReadC45(strings.NewReader("0,1.\nmol: m1,m2.\nconf: i1,i2.\nf1: continuous.\nf2: continuous.\n"), strings.NewReader(s), "t")
}

// TestMILLSparse converts the dense musk1 MILL file to the sparse
// index:value variant, dropping zeros and shuffling pair order, and checks
// the sparse reader gives back the same bags.
func TestMILLSparse(t *testing.T) {
	raw, err := os.ReadFile(testdata("musk1/musk1_mill.data"))
	if err != nil {
		t.Fatal(err)
	}
	var sp strings.Builder
	for ln, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Split(strings.TrimSpace(line), ",")
		sp.WriteString(strings.Join(f[:3], ","))
		var pairs []string
		for j, v := range f[3:] {
			if x, err := parseFeature(v); err == nil && x == 0 {
				continue
			}
			pairs = append(pairs, fmt.Sprintf("%d:%s", j+1, v))
		}
		if ln%2 == 1 {
			slices.Reverse(pairs) // order of pairs does not matter
		}
		if len(pairs) == 0 {
			t.Fatal("test needs a non-zero feature per instance")
		}
		sp.WriteString("," + strings.Join(pairs, ",") + "\n")
	}
	got, err := ReadMILL(strings.NewReader(sp.String()), "musk1_mill", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !got.IsSparse() {
		t.Fatal("a sparse MILL file gave dense bags")
	}
	want := mustLoad(t, "musk1/musk1_mill.data")
	sameDataset(t, got.Densified(), want)

	// A stated dimension pads; one below the largest index is an error.
	small := "i1,b1,1,2:5\ni2,b2,0,1:1\ni3,b2,0,\n"
	d, err := ReadMILL(strings.NewReader(small), "s", 4)
	if err != nil {
		t.Fatal(err)
	}
	sameDataset(t, d.Densified(), &mil.Dataset{Name: "s", Classes: []string{"positive"}, Dim: 4, Bags: []mil.Bag{
		{ID: "b1", Instances: [][]float64{{0, 5, 0, 0}}, Labels: []int{0}},
		{ID: "b2", Instances: [][]float64{{1, 0, 0, 0}, {0, 0, 0, 0}}, Labels: []int{}},
	}})
	if _, err := ReadMILL(strings.NewReader(small), "s", 1); !errors.Is(err, ErrFormat) {
		t.Fatalf("dim 1 with index 2: err = %v", err)
	}
}

// TestMILLNonContiguous: a bag whose lines are split still forms one bag,
// positive when any of its lines is.
func TestMILLNonContiguous(t *testing.T) {
	d, err := mill("i1,b1,0,1\ni2,b2,0,2\ni3,b1,1,3\n")
	if err != nil {
		t.Fatal(err)
	}
	sameDataset(t, d, &mil.Dataset{Name: "t", Classes: []string{"positive"}, Dim: 1, Bags: []mil.Bag{
		{ID: "b1", Instances: [][]float64{{1}, {3}}, Labels: []int{0}},
		{ID: "b2", Instances: [][]float64{{2}}, Labels: []int{}},
	}})
}

func TestARFFQuotingAndIDs(t *testing.T) {
	in := `% comment
@RELATION 'r x'
@attribute 'bag id' {a,'b c'}
@attribute bag relational
  @attribute f1 numeric
  @attribute f2 REAL
@end bag
@attribute sea {0,1}
@attribute sky {0,1}

@data
a,"1,2\n3,4",0,1
'b c', '5,6' ,1,1
`
	d, err := ReadARFF(strings.NewReader(in), []string{"sky", "sea"}, "q")
	if err != nil {
		t.Fatal(err)
	}
	sameDataset(t, d, &mil.Dataset{Name: "q", Classes: []string{"sky", "sea"}, Dim: 2, Bags: []mil.Bag{
		{ID: "a", Instances: [][]float64{{1, 2}, {3, 4}}, Labels: []int{0}},
		{ID: "b c", Instances: [][]float64{{5, 6}}, Labels: []int{0, 1}},
	}})
	if _, err := ReadARFF(strings.NewReader(in), []string{"land"}, "q"); !errors.Is(err, ErrFormat) {
		t.Fatalf("unknown XML label: err = %v", err)
	}
}

func TestReadMulanXML(t *testing.T) {
	f, err := os.Open(testdata("miml_image_zhou/miml_03_data.xml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadMulanXML(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"desert", "mountains", "sea", "sunset", "trees"}; !slices.Equal(got, want) {
		t.Fatalf("labels %q, want %q", got, want)
	}
	nested := `<labels xmlns="http://mulan.sourceforge.net/labels"><label name="a"><label name="a1"/></label><label name="b"/></labels>`
	if got, err := ReadMulanXML(strings.NewReader(nested)); err != nil || !slices.Equal(got, []string{"a", "a1", "b"}) {
		t.Fatalf("nested: %q, %v", got, err)
	}
	if _, err := ReadMulanXML(strings.NewReader("<labels>")); !errors.Is(err, ErrFormat) {
		t.Fatalf("truncated xml: err = %v", err)
	}
}

func TestLoadTruncatedMAT(t *testing.T) {
	raw, err := os.ReadFile(testdata("mscv2/MSCV2.mat"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []int{0, 64, 128, 200, len(raw) / 2, len(raw) - 1} {
		p := filepath.Join(dir, fmt.Sprintf("cut%d.mat", n))
		if err := os.WriteFile(p, raw[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), p) {
			t.Errorf("truncated at %d: err = %v, want ErrFormat naming the file", n, err)
		}
	}
}

func FuzzReadJSONL(f *testing.F) {
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, toyDataset()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"id":"x","instances":[[1,2]],"labels":[3,1,3]}`))
	f.Add([]byte(`{"format":"mimlstream.bags/v1","classes":["a"],"dim":1}` + "\n" + `{"id":"x","instances":[[1]],"labels":[]}`))
	f.Add([]byte(`{"id":"y","instances":[[3,4],[5,6]],"instance_labels":[0,-1]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := ReadJSONL(bytes.NewReader(in), "f")
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		// Whatever is accepted is valid and survives a round trip.
		for i := range d.Bags {
			if err := d.Bags[i].Validate(d.Dim, len(d.Classes)); err != nil {
				t.Fatalf("accepted an invalid bag: %v", err)
			}
		}
		var out bytes.Buffer
		if err := WriteJSONL(&out, d); err != nil {
			t.Fatal(err)
		}
		back, err := ReadJSONL(&out, "f")
		if err != nil {
			t.Fatal(err)
		}
		sameDataset(t, back, d)
	})
}

// TestARFFFlatSparse reads a Corel5k-like Mulan sparse ARFF: present
// clusters become one-hot instances, labels come from the XML names.
func TestARFFFlatSparse(t *testing.T) {
	in := `@relation corel
@attribute Cluster1 {0,1}
@attribute Cluster2 {0,1}
@attribute Cluster3 {0,1}
@attribute sky {0,1}
@attribute sun {0,1}
@data
{0 1, 2 1, 4 1}
{1 1,3 1}
0,1,1,1,1
`
	d, err := ReadARFF(strings.NewReader(in), []string{"sky", "sun"}, "corel")
	if err != nil {
		t.Fatal(err)
	}
	sameDataset(t, d, &mil.Dataset{Name: "corel", Classes: []string{"sky", "sun"}, Dim: 3, Bags: []mil.Bag{
		{ID: "corel-1", Instances: [][]float64{{1, 0, 0}, {0, 0, 1}}, Labels: []int{1}},
		{ID: "corel-2", Instances: [][]float64{{0, 1, 0}}, Labels: []int{0}},
		{ID: "corel-3", Instances: [][]float64{{0, 1, 0}, {0, 0, 1}}, Labels: []int{0, 1}},
	}})
	for _, bad := range []string{"{0 1, 9 1}\n", "{0 1, 3 1\n", "{3 1}\n", "{0 1, 3 2}\n"} {
		head := in[:strings.Index(in, "@data")+len("@data\n")]
		if _, err := ReadARFF(strings.NewReader(head+bad), []string{"sky", "sun"}, "corel"); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "line 8") {
			t.Errorf("%q: err = %v, want ErrFormat at line 8", bad, err)
		}
	}
}

package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// docSeeds are documents on both sides of every branch of the fast path.
func docSeeds(t testing.TB) []string {
	seeds := []string{
		``, ` `, `{}`, `[]`, ` {} `, "\t[\n]\r", `[] []`, `{}x`, `null`, `true`, `false`, `tru`, `nul`, `falsey`,
		`0`, `-0`, `01`, `-01`, `1.`, `.5`, `-`, `1e`, `1e+`, `1E-5`, `1.5e+300`, `1e999`, `-1e-999`, `123456789012345678901234567890`,
		`[1,]`, `[,1]`, `[1 2]`, `[1,2`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":1,"a":[2]}`,
		`"abc"`, `"abc`, `"a\"b"`, `"a\u00e9"`, "\"caf\u00e9\"", "\"a\x01b\"", "\"\xff\"", `{"\u0041":1}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"schema_version":1,"id":"b","dim":2,"instances":[[1,2],[3,"NaN"]],"labels":null}`,
		`{"schema_version":1,"id":"b","dim":1,"instances":[[1e999]]}`,
	}
	ds := streamtest.SmallDataset(4)
	for i := range ds.Bags {
		ds.Bags[i].Instances[0][0] = 1e-7 // exponent form
		raw, err := json.Marshal(NewBagMessage(&ds.Bags[i], "toy", ds.Dim, ds.Classes, true))
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, string(raw))
		var indented bytes.Buffer
		if err := json.Indent(&indented, raw, "", "  "); err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, indented.String())
	}
	return seeds
}

// checkDocument compares decodeDocument with the reference decoder on raw,
// and reports whether the fast path took it.
func checkDocument(t *testing.T, raw []byte) bool {
	t.Helper()
	want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	fast, ok := fastDocument(raw)
	if ok && (wantErr != nil || !reflect.DeepEqual(fast, want)) {
		t.Fatalf("fast path on %q = %#v; reference %#v, %v", raw, fast, want, wantErr)
	}
	got, err := decodeDocument(raw)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("decodeDocument(%q) error %v, reference %v", raw, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeDocument(%q) = %#v, reference %#v", raw, got, want)
	}
	return ok
}

func TestDecodeDocumentMatchesReference(t *testing.T) {
	fast := 0
	for _, s := range docSeeds(t) {
		if checkDocument(t, []byte(s)) {
			fast++
		}
	}
	// The wire form of a bag must take the fast path, or it is no faster.
	ds := streamtest.SmallDataset(3)
	raw, _ := json.Marshal(NewBagMessage(&ds.Bags[0], "toy", ds.Dim, ds.Classes, true))
	if !checkDocument(t, raw) {
		t.Errorf("a bag message took the slow path: %s", raw)
	}
	if deep := strings.Repeat("[", maxFastDepth+2) + strings.Repeat("]", maxFastDepth+2); checkDocument(t, []byte(deep)) {
		t.Error("a document deeper than maxFastDepth took the fast path")
	}
	t.Logf("%d seeds on the fast path", fast)
}

// FuzzDecodeDocument: go test -run '^$' -fuzz FuzzDecodeDocument -fuzztime 30s ./internal/stream/wire/
func FuzzDecodeDocument(f *testing.F) {
	for _, s := range docSeeds(f) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkDocument(t, raw) })
}

// BenchmarkDecodeDocument measures the decoding of MSCV2 bag messages by
// the fast path against the reference decoder it replaces.
func BenchmarkDecodeDocument(b *testing.B) {
	ds, err := dataset.Load("../../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		b.Fatal(err)
	}
	raws := make([][]byte, len(ds.Bags))
	for i := range ds.Bags {
		raws[i], _ = json.Marshal(NewBagMessage(&ds.Bags[i], "mscv2", ds.Dim, ds.Classes, false))
	}
	b.Run("decode", func(b *testing.B) {
		for i := range b.N {
			if _, err := decodeDocument(raws[i%len(raws)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-reference", func(b *testing.B) {
		for i := range b.N {
			if _, err := jsonschema.UnmarshalJSON(bytes.NewReader(raws[i%len(raws)])); err != nil {
				b.Fatal(err)
			}
		}
	})
}

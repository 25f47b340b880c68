package wire

import (
	"bytes"
	"encoding/json"
	"errors"
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
		// Ambiguous: repeated keys (also after unescaping, also nested),
		// invalid UTF-8, unpaired surrogate escapes; and their unambiguous
		// neighbours.
		`{"a":1,"\u0061":2}`, `{"a":{"b":1,"b":2}}`, `[{"a":1},{"a":1}]`, `{"a":{"a":1}}`, `{"a":[{"b":1}],"b":{"a":2}}`,
		`{"id":"x","id":"y"}`, `{"":1,"":2}`, `{"a\\":1,"a\\\\":2}`,
		"{\"id\":\"a\xffb\"}", "{\"id\xfe\":1}", "\"\xef\xbf\xbd\"", `"\ufffd"`, `"\\ufffd"`,
		`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`, `"\\ud83d"`, `{"\udc00":1}`,
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
// and reports whether the fast path took it. The reference accepts
// ambiguous documents; whether raw is one is decided by ambiguousRef, by
// other means than decodeDocument's.
func checkDocument(t *testing.T, raw []byte) bool {
	t.Helper()
	want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	ambiguous := wantErr == nil && ambiguousRef(raw, want)
	fast, ok := fastDocument(raw)
	if ok && (wantErr != nil || ambiguous || !reflect.DeepEqual(fast, want)) {
		t.Fatalf("fast path on %q = %#v; reference %#v, %v (ambiguous %v)", raw, fast, want, wantErr, ambiguous)
	}
	got, err := decodeDocument(raw)
	switch {
	case wantErr != nil:
		if err == nil || err.Error() != wantErr.Error() {
			t.Fatalf("decodeDocument(%q) error %v, reference %v", raw, err, wantErr)
		}
	case ambiguous:
		if !errors.Is(err, ErrAmbiguous) || got != nil {
			t.Fatalf("decodeDocument(%q) = %#v, %v; want ErrAmbiguous", raw, got, err)
		}
	default:
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeDocument(%q) = %#v, %v; reference %#v", raw, got, err, want)
		}
	}
	return ok
}

// ambiguousRef decides ambiguity from the reference's result: a repeated
// key makes the document hold fewer object members than it has colons
// outside strings (each member has exactly one), and invalid UTF-8 or an
// unpaired surrogate escape makes the decoded strings hold more U+FFFD
// than the document spells out.
func ambiguousRef(raw []byte, doc any) bool {
	colons, explicitFFFD := 0, 0
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case !inString && c == ':':
			colons++
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\':
			if raw[i+1] == 'u' && strings.EqualFold(string(raw[i+2:i+6]), "fffd") {
				explicitFFFD++
			}
			if raw[i+1] == 'u' {
				i += 5
			} else {
				i++
			}
		case c == 0xEF && bytes.HasPrefix(raw[i:], []byte("\uFFFD")):
			explicitFFFD++
			i += 2
		}
	}
	members, decodedFFFD := 0, 0
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			members += len(x)
			for k, e := range x {
				decodedFFFD += strings.Count(k, "\uFFFD")
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			decodedFFFD += strings.Count(x, "\uFFFD")
		}
	}
	walk(doc)
	return colons > members || decodedFFFD > explicitFFFD
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

// TestAmbiguousRejected lists what is ambiguous and what is not, so that
// neither side of checkDocument can drift to "never".
func TestAmbiguousRejected(t *testing.T) {
	cases := []struct {
		doc       string
		ambiguous bool
	}{
		{`{"a":1,"a":1}`, true},
		{`{"a":1,"\u0061":2}`, true},
		{`{"x":[{"b":1,"c":2,"b":3}]}`, true},
		{"{\"id\":\"a\xffb\"}", true},
		{"{\"id\xc3\":1}", true},
		{`"\ud83d"`, true},
		{`"\ude00\ud83d"`, true},
		{`"\ud83d\ud83d\ude00"`, true},
		{`{"a":1,"b":{"a":1},"c":[{"a":1},{"a":1}]}`, false},
		{`{"a\\":1,"a\\\\":2}`, false},
		{`"\ud83d\ude00 caf\u00e9 ` + "\u00e9\U0001F600" + `"`, false},
		{`"\ufffd ` + "\ufffd" + `"`, false},
		{`"\\ud83d"`, false},
	}
	for _, tc := range cases {
		want, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.doc))
		if err != nil {
			t.Fatalf("%q: the reference refuses it: %v", tc.doc, err)
		}
		if got := ambiguousRef([]byte(tc.doc), want); got != tc.ambiguous {
			t.Errorf("ambiguousRef(%q) = %v, want %v", tc.doc, got, tc.ambiguous)
		}
		_, err = decodeDocument([]byte(tc.doc))
		if got := errors.Is(err, ErrAmbiguous); got != tc.ambiguous {
			t.Errorf("decodeDocument(%q) error %v, want ambiguous %v", tc.doc, err, tc.ambiguous)
		}
		checkDocument(t, []byte(tc.doc))
	}
}

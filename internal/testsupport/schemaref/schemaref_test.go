package schemaref

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// ambiguousRef decides ambiguity from the generic decoder's result, by
// other means than checkUnambiguous: a repeated key makes the document hold
// fewer object members than it has colons outside strings (each member has
// exactly one), and invalid UTF-8 or an unpaired surrogate escape makes the
// decoded strings hold more U+FFFD than the document spells out.
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

// TestAmbiguousRejected: the reference refuses exactly the ambiguous
// documents, as an independent count decides them. Catches a reference
// that drifts to accepting a repeated key or an unpaired surrogate, which
// would let the differential tests pass a typed decoder that does too.
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
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.doc))
		if err != nil {
			t.Fatalf("%q: the generic decoder refuses it: %v", tc.doc, err)
		}
		if got := ambiguousRef([]byte(tc.doc), doc); got != tc.ambiguous {
			t.Errorf("ambiguousRef(%q) = %v, want %v", tc.doc, got, tc.ambiguous)
		}
		_, err = DecodeDocument([]byte(tc.doc))
		if got := errors.Is(err, wire.ErrAmbiguous); got != tc.ambiguous {
			t.Errorf("DecodeDocument(%q) error %v, want ambiguous %v", tc.doc, err, tc.ambiguous)
		}
	}
}

package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// plainDocs are documents the fast path must take itself: the wire form of
// bags and the JSON constructs in it, at the edges of what the fast parser
// accepts (every whitespace byte, the printable-ASCII bounds ' ' and '~',
// every number form, nesting exactly maxFastDepth deep).
func plainDocs() []string {
	return []string{
		`{}`, `[]`, ` { } `, "\t[\n1\r]\n", `{"a":{}}`, `[[],{}]`, `{"a":[1,2],"b":{"c":null}}`,
		`true`, `false`, `null`, `[true,false,null]`, `{"t":true}`,
		`0`, `-0`, `12`, `-7`, `0.5`, `-1.25`, `1e5`, `1E+5`, `1e-5`, `-0.0e0`, `10.01E-10`, `9`, `-9.09e9`, `1234567890`, `[9,19]`,
		`" "`, `"~"`, `" a~b "`, `""`, `{"":""}`, `{"k" : "v" , "l" : [ 1 , 2 ] }`,
		strings.Repeat("[", maxFastDepth+1) + strings.Repeat("]", maxFastDepth+1),
		nestedObjects(maxFastDepth + 1),
		`{"schema_version":1,"id":"b-1","dim":2,"instances":[[0.5,-1e-7],[3,4]],"labels":[0],"classes":["a","b"]}`,
	}
}

// nestedObjects returns {"a":{"a":...{}...}} with depth objects.
func nestedObjects(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

// TestFastPathTakesPlainDocuments: the fast path must accept every plain
// document and give exactly the reference decoder's value. The slow path
// gives the same value, so without this check any fault that makes the
// fast parser give up (a negated comparison in the number, string or
// literal scanner, a depth bound off by one) survives and the annotator
// silently loses the speed the fast path exists for.
func TestFastPathTakesPlainDocuments(t *testing.T) {
	for _, s := range plainDocs() {
		want, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
		if err != nil {
			t.Fatalf("fixture %q: %v", s, err)
		}
		got, ok := fastDocument([]byte(s))
		if !ok {
			t.Errorf("fast path gave up on the plain document %q", s)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("fast path on %q = %#v, reference %#v", s, got, want)
		}
	}
}

// slowDocs are documents the fast path must refuse: invalid or truncated
// JSON (every prefix of an object: {"a":1, is the one the issue names),
// escapes, control and non-ASCII bytes, DEL, repeated keys, nesting deeper
// than maxFastDepth through arrays and through objects.
func slowDocs() []string {
	docs := []string{
		`{"a":1,`, `{"a":1`, `{"a":`, `{"a"`, `{"a`, `{`, `[`, `[1,`, `[1`, `"abc`, `-`, `1.`, `1e`, `1e+`, `-x`, `01`,
		`{"a":1 "b":2}`, `{"a" 1}`, `{1:2}`, `[1 2]`, `tru`, `nul`, `fals`, `{}x`, `[] []`, ``, ` `,
		`"a\"b"`, "\"a\x1fb\"", "\"a\x7fb\"", "\"caf\u00e9\"", `{"a":1,"a":2}`,
		strings.Repeat("[", maxFastDepth+2) + strings.Repeat("]", maxFastDepth+2),
		nestedObjects(maxFastDepth + 2),
	}
	bag := `{"schema_version":1,"id":"b","dim":1,"instances":[[1.5e-3],[-2]],"labels":[0],"classes":["a"],"ok":true,"n":null}`
	for i := range len(bag) {
		docs = append(docs, bag[:i])
	}
	return docs
}

// TestFastPathRefusesTruncatedAndDeep: the fast parser must give up (and
// never panic) on truncated input, leaving the verdict to the reference;
// and on nesting deeper than maxFastDepth, whether through arrays or
// objects. Catches an end-of-input check relaxed from >= to > (an index out
// of range on {"a":1,) and an object that does not count toward the depth.
func TestFastPathRefusesTruncatedAndDeep(t *testing.T) {
	for _, s := range slowDocs() {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("fast path panicked on %q: %v", s, r)
				}
			}()
			if v, ok := fastDocument([]byte(s)); ok {
				t.Errorf("fast path took %q (= %#v), which it must leave to the reference", s, v)
			}
		}()
	}
}

// FuzzFastDocument: go test -run '^$' -fuzz FuzzFastDocument ./internal/stream/wire/
// The fast path must never panic and must only accept what the reference
// accepts, with the same value; seeded with truncated and deeply nested
// documents (the faults the unit tests above pin).
func FuzzFastDocument(f *testing.F) {
	for _, s := range append(plainDocs(), slowDocs()...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := fastDocument(raw)
		if !ok {
			return
		}
		want, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("fast path on %q = %#v; reference %#v, %v", raw, got, want, err)
		}
	})
}

// TestDecodeBagSizeLimitBoundary: a message of exactly maxBytes passes, one
// byte more is oversize. Catches the limit compared with >= instead of >.
func TestDecodeBagSizeLimitBoundary(t *testing.T) {
	raw := []byte(`{"schema_version":1,"id":"ok","dim":2,"instances":[[1,2]]}`)
	v, err := NewValidator(len(raw))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.DecodeBag(raw); err != nil {
		t.Errorf("a message of exactly the limit: %v", err)
	}
	longer := append(bytes.Clone(raw[:len(raw)-1]), ' ', '}')
	_, err = v.DecodeBag(longer)
	if r, _ := ReasonOf(err); r != ReasonOversize {
		t.Errorf("a message one byte over the limit: %v, want oversize", err)
	}
	// The dead-letter text names the reason first.
	if err == nil || !strings.HasPrefix(err.Error(), string(ReasonOversize)+": message of ") {
		t.Errorf("error text %q, want it to start with the reason", err)
	}
}

// TestDecodeBagLabelEdgeCases: labels without a class vocabulary are
// refused with the labels reason (the schema requires "classes" with
// "labels", but an empty vocabulary passes it); an empty label set with a
// vocabulary is a labeled negative bag; an empty instance_labels array
// decodes as none. Catches the vocabulary check deleted or inverted, and
// instance_labels [] kept as a non-nil empty slice (len > 0 read as >= 0),
// which would make a round trip unequal.
func TestDecodeBagLabelEdgeCases(t *testing.T) {
	v, err := NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.DecodeBag([]byte(`{"schema_version":1,"id":"x","dim":1,"instances":[[1]],"labels":[],"classes":[]}`))
	if r, _ := ReasonOf(err); r != ReasonLabels || !strings.Contains(err.Error(), "labels without a class vocabulary") {
		t.Errorf("labels with an empty vocabulary: %v, want %s (labels without a class vocabulary)", err, ReasonLabels)
	}
	m, err := v.DecodeBag([]byte(`{"schema_version":1,"id":"x","dim":1,"instances":[[1]],"labels":[],"classes":["a"],"instance_labels":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Labels == nil || len(m.Labels) != 0 {
		t.Errorf("labels [] decoded as %#v, want a labeled bag with no class", m.Labels)
	}
	if m.InstanceLabels != nil {
		t.Errorf("instance_labels [] decoded as %#v, want nil", m.InstanceLabels)
	}
	if !reflect.DeepEqual(m.Bag(), &mil.Bag{ID: "x", Instances: [][]float64{{1}}, Labels: []int{}}) {
		t.Errorf("decoded bag %+v", m.Bag())
	}
}

// TestValidateAnnotationAndDeadLetterRefuseSchemaViolations: both checks
// must refuse well-formed JSON that breaks the schema and malformed JSON,
// and pass a valid record. Catches the error check in validate inverted
// (which returns nil for every document that parses) and the schemas
// swapped between the two.
func TestValidateAnnotationAndDeadLetterRefuseSchemaViolations(t *testing.T) {
	v, err := NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ann, _ := json.Marshal(AnnotationMessage{SchemaVersion: 1, BagID: "b", Model: "orlr", ModelVersion: "v1", Mode: "inductive",
		Classes: []string{"a"}, BagLabels: []int{0}, BagScores: []float64{0.9}, AnnotatedAt: now})
	dl := NewDeadLetter(StageIngest, ReasonSchema, errors.New("bad"), "k", "t", 0, 3, []byte("x")).Encode(0)
	checks := []struct {
		name  string
		check func([]byte) error
		valid []byte
	}{
		{"annotation", v.ValidateAnnotation, ann},
		{"dead letter", v.ValidateDeadLetter, dl},
	}
	for _, c := range checks {
		if err := c.check(c.valid); err != nil {
			t.Errorf("%s: valid record refused: %v", c.name, err)
		}
		for _, bad := range []string{`{}`, `{"schema_version":2}`, `[]`, `"x"`} {
			err := c.check([]byte(bad))
			var ve *jsonschema.ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("%s: schema-invalid %s: err = %v, want a schema violation", c.name, bad, err)
			}
		}
		if err := c.check([]byte(`{"schema_version":1,`)); err == nil {
			t.Errorf("%s: malformed JSON accepted", c.name)
		}
	}
	// Each record is refused by the other's schema.
	if v.ValidateAnnotation(dl) == nil || v.ValidateDeadLetter(ann) == nil {
		t.Error("an annotation and a dead letter validate against each other's schema")
	}
}

// TestSurrogateBoundaries: escaped UTF-16 surrogates at the edges of the
// high (D800–DBFF) and low (DC00–DFFF) ranges. A pair decodes; a lone half,
// or a high half followed by a non-surrogate escape, is ambiguous (parsers
// disagree on it) and refused; the code points just outside the ranges are
// ordinary characters. Catches every off-by-one in the range checks.
func TestSurrogateBoundaries(t *testing.T) {
	v, err := NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id        string // JSON string body
		ambiguous bool
		want      string
	}{
		{`\ud800\udc00`, false, "\U00010000"},
		{`\udbff\udfff`, false, "\U0010FFFF"},
		{`x\ud7ff`, false, "x\ud7ff"},
		{`x\ue000`, false, "x\ue000"},
		{`\ud800\ue000`, true, ""},
		{`\udbff\udbff`, true, ""},
		{`\ud800\ud7ff`, true, ""},
		{`\ud800`, true, ""},
		{`x\udbff`, true, ""},
		{`x\udc00`, true, ""},
		{`x\udfff`, true, ""},
		{`x\udc00\ud800`, true, ""},
		{`x\udc00\udc00`, true, ""}, // DC00 is a low half, never a high one
	} {
		raw := `{"schema_version":1,"id":"` + tc.id + `","dim":1,"instances":[[1]]}`
		m, err := v.DecodeBag([]byte(raw))
		switch {
		case tc.ambiguous && !errors.Is(err, ErrAmbiguous):
			t.Errorf("id %s: err = %v, want ErrAmbiguous", tc.id, err)
		case !tc.ambiguous && (err != nil || m.ID != tc.want):
			t.Errorf("id %s: %v, %v; want id %q", tc.id, m, err, tc.want)
		}
	}
}

// TestInvalidUTF8Position: the ambiguity error names the byte where the
// invalid UTF-8 starts, past valid multi-byte characters and past a
// literal U+FFFD (valid UTF-8 that decodes to utf8.RuneError, with a width
// of 3). Catches the scan stopping at the first rune of any kind, or at a
// literal U+FFFD, or never (the position then is 0 or the end).
func TestInvalidUTF8Position(t *testing.T) {
	v, err := NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "{\"schema_version\":1,\"id\":\"a\u00e9\ufffdb"
	raw := prefix + "\xffc\",\"dim\":1,\"instances\":[[1]]}"
	_, err = v.DecodeBag([]byte(raw))
	want := fmt.Sprintf("invalid UTF-8 at byte %d", len(prefix))
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want ErrAmbiguous with %q", err, want)
	}
}

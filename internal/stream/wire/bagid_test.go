package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// refBagID is BagID's reference: encoding/json's tokenizer over the whole
// object, the first top-level "id" whose value is a string.
func refBagID(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", false
		}
		if k == "id" {
			v, err := dec.Token()
			s, isStr := v.(string)
			return s, err == nil && isStr
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

var bagIDDocs = []string{
	`{"id":"a"}`,
	` { "schema_version" : 1 , "id" : "b" } `,
	`{"instances":[[1,2],[3,"x]\"}"]],"nested":{"id":"not this","o":{"id":"nor this"}},"id":"c"}`,
	`{"s":"}],\\","id":"d\"e\\f\u00e9\ud83d\ude00"}`,
	`{"\u0069d":"escaped key"}`,
	`{"idx":"no","ID":"nor this","id":"yes"}`,
	`{"a":true,"b":null,"c":-1.5e3,"d":[],"e":{},"id":""}`,
	`{"schema_version":1,"id":"bag-7","dim":2,"instances":[[1,2]]}`,
	`{"a":1}`,
	`[]`,
	`{"id":1}`,
	`{"id":null,"x":"y"}`,
	`{`,
	`{}`,
	`"id"`,
	``,
}

// TestBagID holds BagID to encoding/json on whole messages with the id in
// every position, escapes and nested values before it, and none at all.
func TestBagID(t *testing.T) {
	for _, d := range bagIDDocs {
		want, wantOK := refBagID([]byte(d))
		got, ok := wire.BagID([]byte(d))
		if got != want || ok != wantOK {
			t.Errorf("BagID(%s) = %q, %v; want %q, %v", d, got, ok, want, wantOK)
		}
	}
}

// TestBagIDOfPrefix: a message cut anywhere after its id's closing quote
// still names its bag, and one cut before it names none (nor a part of
// it).
func TestBagIDOfPrefix(t *testing.T) {
	const msg = `{"schema_version":1,"id":"bag-\u00e9","dim":2,"instances":[[1,2],[3,4]]}`
	end := strings.Index(msg, `","dim"`) + 1
	for n := range len(msg) + 1 {
		id, ok := wire.BagID([]byte(msg[:n]))
		switch {
		case n >= end && (!ok || id != "bag-é"):
			t.Errorf("BagID(%s) = %q, %v; want bag-é", msg[:n], id, ok)
		case n < end && ok:
			t.Errorf("BagID(%s) = %q; want none", msg[:n], id)
		}
	}
}

// TestBagIDAmbiguous: an id that DecodeBag refuses as ambiguous is none,
// not the replacement characters encoding/json would make of it.
func TestBagIDAmbiguous(t *testing.T) {
	for _, d := range []string{"{\"id\":\"a\xffb\"}", `{"id":"\ud800"}`} {
		if id, ok := wire.BagID([]byte(d)); ok {
			t.Errorf("BagID(%q) = %q; want none", d, id)
		}
		if _, err := (&wire.Validator{}).DecodeBag([]byte(d)); !errors.Is(err, wire.ErrAmbiguous) {
			t.Errorf("DecodeBag(%q) = %v; want ErrAmbiguous", d, err)
		}
	}
}

// FuzzBagID holds BagID to the reference on any valid JSON that DecodeBag
// does not find ambiguous (a repeated key: encoding/json keeps the last,
// BagID stops at the first; invalid UTF-8 or an unpaired surrogate: see
// TestBagIDAmbiguous).
func FuzzBagID(f *testing.F) {
	for _, d := range bagIDDocs {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		if _, err := (&wire.Validator{}).DecodeBag(raw); errors.Is(err, wire.ErrAmbiguous) {
			return
		}
		want, wantOK := refBagID(raw)
		got, ok := wire.BagID(raw)
		if got != want || ok != wantOK {
			t.Errorf("BagID(%s) = %q, %v; want %q, %v", raw, got, ok, want, wantOK)
		}
	})
}

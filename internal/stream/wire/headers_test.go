package wire_test

import (
	"testing"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestDecodeBagHeaders: a bag's headers are checked before its value: a
// content type the pipeline does not read, or one that the value plainly
// contradicts, is content_type (not malformed_json, which blames the
// bytes), and a schema version this build does not read is schema_version
// (not silently taken as version 1). No header means JSON, version 1.
func TestDecodeBagHeaders(t *testing.T) {
	v, err := wire.NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	jsonBag := []byte(`{"schema_version":1,"id":"h1","dim":2,"instances":[[0.1,0.2]]}`)
	m, err := v.DecodeBag(jsonBag)
	if err != nil {
		t.Fatal(err)
	}
	protoBag := m.AppendProto(nil)
	cases := []struct {
		name, ct, sv string
		raw          []byte
		want         wire.Reason // "": accepted
	}{
		{"no headers", "", "", jsonBag, ""},
		{"JSON, version 1", wire.ContentTypeJSON, "1", jsonBag, ""},
		{"JSON with a UTF-8 charset", "application/json; charset=UTF-8", "1", jsonBag, ""},
		{"protobuf", wire.ContentTypeProtobuf, "1", protoBag, ""},
		{"text/plain", "text/plain", "1", jsonBag, "content_type"},
		{"JSON under the protobuf content type", wire.ContentTypeProtobuf, "1", jsonBag, "content_type"},
		{"JSON in another charset", "application/json; charset=latin1", "", jsonBag, "content_type"},
		{"an unparsable content type", "application/json;;", "", jsonBag, "content_type"},
		{"schema version 9", wire.ContentTypeJSON, "9", jsonBag, "schema_version"},
		{"schema version 01", wire.ContentTypeJSON, "01", jsonBag, "schema_version"},
		{"schema version 9, protobuf", wire.ContentTypeProtobuf, "9", protoBag, "schema_version"},
		{"garbage under the protobuf content type", wire.ContentTypeProtobuf, "1", []byte{0xff, 0xff}, wire.ReasonMalformedJSON},
	}
	for _, c := range cases {
		got, err := v.DecodeBagHeaders(c.ct, c.sv, c.raw)
		r, _ := wire.ReasonOf(err)
		if r != c.want || (c.want == "" && (err != nil || got.ID != "h1")) {
			t.Errorf("%s: reason %q (%v), want %q", c.name, r, err, c.want)
		}
		if c.want == "content_type" || c.want == "schema_version" {
			t.Logf("%s: %v", c.name, err)
		}
	}
}

// TestDecodeBagAsRefusesForeignContentTypes is the content-type half of
// TestDecodeBagHeaders through DecodeBagAs (no schema-version header).
func TestDecodeBagAsRefusesForeignContentTypes(t *testing.T) {
	v, err := wire.NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	jsonBag := []byte(`{"schema_version":1,"id":"h1","dim":2,"instances":[[0.1,0.2]]}`)
	for _, ct := range []string{"text/plain", wire.ContentTypeProtobuf, "application/octet-stream"} {
		_, err := v.DecodeBagAs(ct, jsonBag)
		if r, _ := wire.ReasonOf(err); r != "content_type" {
			t.Errorf("content type %q: reason %q (%v), want content_type", ct, r, err)
		}
	}
}

package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestRejectNamesTheBag: a rejected bag that can be read names its id (in
// JSON and in the binary encoding), so its dead letter is keyed by it; a
// message too broken to read, or whose id the schema refuses, names none
// and is keyed by where it lies.
func TestRejectNamesTheBag(t *testing.T) {
	v, err := wire.NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name, raw, id string
	}{
		{"dimension", `{"schema_version":1,"id":"b1","dim":3,"instances":[[1,2]]}`, "b1"},
		{"non_finite", `{"schema_version":1,"id":"b2","dim":2,"instances":[[1,1e308]]}`, "b2"},
		{"schema", `{"schema_version":1,"id":"b3","dim":2,"instances":[[1,2]],"extra":1}`, "b3"},
		{"malformed", `{"schema_version":1,"id":"b4"`, ""},
		{"id too long", `{"schema_version":1,"id":"` + long + `","dim":3,"instances":[[1,2]]}`, ""},
	} {
		_, err := v.DecodeBag([]byte(tc.raw))
		var re *wire.RejectError
		if !errors.As(err, &re) || re.BagID != tc.id {
			t.Errorf("%s: %v names bag %q, want %q", tc.name, err, bagID(re), tc.id)
		}
		key := string(wire.OutputKey(bagID(re), "bags", 1, 7))
		if (tc.id != "" && key != tc.id) || (tc.id == "" && key != "bags/1/7") {
			t.Errorf("%s: output key %q", tc.name, key)
		}
	}
	m := wire.BagMessage{SchemaVersion: 1, ID: "p1", Dim: 3, Instances: [][]float64{{1, 2}}}
	if _, err := v.DecodeBagProto(m.AppendProto(nil)); !namesBag(err, "p1") {
		t.Errorf("binary, dimension: %v does not name p1", err)
	}
}

func bagID(re *wire.RejectError) string {
	if re == nil {
		return ""
	}
	return re.BagID
}

func namesBag(err error, id string) bool {
	var re *wire.RejectError
	return errors.As(err, &re) && re.BagID == id
}

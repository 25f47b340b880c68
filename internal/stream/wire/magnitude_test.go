package wire_test

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestFeatureMagnitudeBound: a finite feature beyond MaxFeatureMagnitude
// (1e308 broke every warm-started orlr refit: "bag label has zero
// probability under the model") is refused as non_finite by every door
// (JSON and binary decoding, the in-memory check of ingest's datasets), in
// dense and sparse bags; one at the bound is accepted.
func TestFeatureMagnitudeBound(t *testing.T) {
	v, err := wire.NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    float64
		want wire.Reason
	}{
		{1e308, wire.ReasonNonFinite},
		{-1e308, wire.ReasonNonFinite},
		{math.Nextafter(wire.MaxFeatureMagnitude, math.Inf(1)), wire.ReasonNonFinite},
		{wire.MaxFeatureMagnitude, ""},
		{-wire.MaxFeatureMagnitude, ""},
		{1e15, ""},
	} {
		dense := wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 2, Instances: [][]float64{{1, tc.f}}}
		sparse := wire.BagMessage{SchemaVersion: 1, ID: "b", Dim: 2, SparseInstances: []mil.SparseVec{{Idx: []int32{1}, Val: []float64{tc.f}}}}
		for _, m := range []wire.BagMessage{dense, sparse} {
			raw, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			kind := "dense"
			if m.SparseInstances != nil {
				kind = "sparse"
			}
			_, jerr := v.DecodeBag(raw)
			_, perr := v.DecodeBagProto(m.AppendProto(nil))
			_, cerr := v.CheckEncoded(&m, len(raw))
			for door, err := range map[string]error{"JSON": jerr, "binary": perr, "CheckEncoded": cerr} {
				got, _ := wire.ReasonOf(err)
				if got != tc.want {
					t.Errorf("%s feature %g, %s: reason %q (%v), want %q", kind, tc.f, door, got, err, tc.want)
				} else if tc.want != "" {
					t.Logf("%s feature %g, %s: %v", kind, tc.f, door, err)
				}
			}
		}
	}
	if s := fmt.Sprint(wire.MaxFeatureMagnitude); s != "1e+100" {
		t.Errorf("MaxFeatureMagnitude = %s; schemas/bag.schema.json's description says 1e100", s)
	}
}

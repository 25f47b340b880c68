package admission

import (
	"testing"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestTargetFeaturizer: a target with a featurizer refuses a bag of
// another featurizer and a bag without one (reason featurizer); the zero
// featurizer (vectors from the sender) refuses a featurized bag; a target
// without a featurizer checks none.
func TestTargetFeaturizer(t *testing.T) {
	a := media.Featurizer{Name: "photo-regions", Version: "1"}
	b := media.Featurizer{Name: "photo-regions", Version: "2"}
	zero := media.Featurizer{}
	bag := func(f *media.Featurizer) *wire.BagMessage {
		return &wire.BagMessage{ID: "x", Dim: 2, Instances: [][]float64{{1, 2}}, Featurizer: f}
	}
	for _, tc := range []struct {
		target *media.Featurizer
		bag    *media.Featurizer
		ok     bool
	}{
		{&a, &a, true}, {&a, &b, false}, {&a, nil, false},
		{&zero, nil, true}, {&zero, &a, false},
		{nil, &a, true}, {nil, nil, true},
	} {
		err := Target{Model: "model v1", Dim: 2, Featurizer: tc.target}.Check(bag(tc.bag))
		r, _ := Reason(err)
		if (err == nil) != tc.ok || (err != nil && r != wire.ReasonFeaturizer) {
			t.Errorf("target %v, bag %v: %v (reason %q)", tc.target, tc.bag, err, r)
		}
	}
}

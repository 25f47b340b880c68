package featurestore

import (
	"errors"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media"
)

// TestCompatibleFeaturizer: a version of another featurizer, or of none
// against one, is incompatible (the promotion guard), naming both.
func TestCompatibleFeaturizer(t *testing.T) {
	a := &media.Featurizer{Name: "photo-regions", Version: "1"}
	b := &media.Featurizer{Name: "photo-regions", Version: "1", Params: map[string]string{"segmenter": "grid"}}
	base := VersionMeta{Version: "v1", Dim: 2, Classes: []string{"x"}}
	with := func(f *media.Featurizer) VersionMeta { m := base; m.Featurizer = f; return m }
	for _, tc := range []struct {
		cur, next *media.Featurizer
		ok        bool
	}{{a, a, true}, {nil, nil, true}, {a, b, false}, {a, nil, false}, {nil, a, false}} {
		err := Compatible(with(tc.cur), with(tc.next))
		if (err == nil) != tc.ok || (err != nil && (!errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "featurizer"))) {
			t.Errorf("%v over %v: %v", tc.next, tc.cur, err)
		}
	}
}

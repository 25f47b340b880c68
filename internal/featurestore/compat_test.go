package featurestore

import (
	"errors"
	"strings"
	"testing"
)

func TestCompatible(t *testing.T) {
	base := VersionMeta{Version: "v2", Dim: 48, Classes: []string{"a", "b", "c"}}
	tests := []struct {
		name string
		next VersionMeta
		want []string // substrings of the error; none: compatible
	}{
		{"same", VersionMeta{Version: "v3", Kind: "other", Dim: 48, Classes: []string{"a", "b", "c"}}, nil},
		{"dimension", VersionMeta{Version: "v3", Dim: 166, Classes: []string{"a", "b", "c"}},
			[]string{"v3 has input dimension 166, v2 has 48"}},
		{"classes reordered", VersionMeta{Version: "v3", Dim: 48, Classes: []string{"b", "a", "c"}},
			[]string{`classes 3 ["b" "a" "c"], v2 has 3 ["a" "b" "c"]`}},
		{"both", VersionMeta{Version: "v3", Dim: 166, Classes: []string{"musk", "u1", "u2", "u3", "u4", "u5"}},
			[]string{"dimension 166", `classes 6 ["musk" "u1" "u2" "u3" "u4"]...`}},
		{"fewer classes", VersionMeta{Dim: 48, Classes: []string{"a", "b"}}, []string{"the model has classes 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Compatible(base, tc.next)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Compatible = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrIncompatible) {
				t.Fatalf("Compatible = %v, want ErrIncompatible", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

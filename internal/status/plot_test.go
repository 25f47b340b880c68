package status

import (
	"strings"
	"testing"
)

func TestTrimZeros(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"25.00", "25"},
		{"0.0750", "0.075"},
		{"0.10", "0.1"},
		{"100", "100"},
		{"0", "0"},
		{"", ""},
		{"1.5e+06", "1.5e+06"},
		{"-2.50", "-2.5"},
	} {
		if got := trimZeros(tc.in); got != tc.want {
			t.Errorf("trimZeros(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestPlainTicksShortLabels: the labels of the refit plot's axis, whose
// values carry the ticker's rounding error, stay as short as the
// default ticker's (the page once showed "0.0750000000000001").
func TestPlainTicksShortLabels(t *testing.T) {
	for _, r := range [][2]float64{{0, 0.0750000000000001}, {0, 1}, {0.0348, 0.0783}, {0, 25}, {1e-4, 3e-4}} {
		for _, tk := range plainTicks.Ticks(r[0], r[1]) {
			if len(tk.Label) > 8 || strings.HasSuffix(tk.Label, "0") && strings.Contains(tk.Label, ".") {
				t.Errorf("range %v: tick %v labelled %q", r, tk.Value, tk.Label)
			}
		}
	}
}

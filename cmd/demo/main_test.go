package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestExitCodes covers what exits before the demo starts anything.
func TestExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want []string // in stderr
	}{
		{[]string{"--help"}, 0, []string{"Usage: demo", "--label-fraction", "$MIMLSTREAM_DEMO_RATE"}},
		{[]string{"-h"}, 0, []string{"Usage: demo"}},
		{[]string{"extra"}, 1, []string{`demo: unexpected arguments ["extra"]`}},
		{[]string{"--bogus"}, 1, []string{"bogus"}},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("demo %q: stderr lacks %q:\n%s", tc.args, w, stderr.String())
			}
		}
		if code != tc.code {
			t.Errorf("demo %q exits %d, want %d", tc.args, code, tc.code)
		}
	}
}

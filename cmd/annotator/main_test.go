package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want []string // in stderr
	}{
		{[]string{"--help"}, 0, []string{"Usage: annotator", "--batch-size", "$MIMLSTREAM_ANNOTATOR_BROKERS"}},
		{[]string{"-h"}, 0, []string{"Usage: annotator"}},
		{nil, 1, []string{"annotator: --brokers is required"}},
		{[]string{"--bogus"}, 1, []string{"bogus"}},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("annotator %q: stderr lacks %q:\n%s", tc.args, w, stderr.String())
			}
		}
		if code != tc.code {
			t.Errorf("annotator %q exits %d, want %d", tc.args, code, tc.code)
		}
	}
}

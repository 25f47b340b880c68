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
		{[]string{"--help"}, 0, []string{"Usage: ingest", "--label-fraction", "$MIMLSTREAM_INGEST_DATA"}},
		{[]string{"-h"}, 0, []string{"Usage: ingest"}},
		{[]string{"--brokers", "127.0.0.1:1"}, 1, []string{"ingest: give exactly one of --data, --jsonl and --listen"}},
		{[]string{"--bogus"}, 1, []string{"bogus"}},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("ingest %q: stderr lacks %q:\n%s", tc.args, w, stderr.String())
			}
		}
		if code != tc.code {
			t.Errorf("ingest %q exits %d, want %d", tc.args, code, tc.code)
		}
	}
}

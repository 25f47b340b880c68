package main

import (
	"strings"
	"testing"
)

// TestSubcommandHelp checks every subcommand's --help (and -h) exits 0 and
// lists its flags with their environment variables. The dispatcher's own
// help is in TestDispatcher.
func TestSubcommandHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string // in stderr
	}{
		{[]string{"serve", "--help"}, []string{"Usage: retrainer serve", "--keep-versions", "$MIMLSTREAM_RETRAINER_SERVE_KEEP_VERSIONS"}},
		{[]string{"serve", "-h"}, []string{"Usage: retrainer serve"}},
		{[]string{"fit", "--help"}, []string{"Usage: retrainer fit", "--promote", "$MIMLSTREAM_RETRAINER_FIT_DATA"}},
		{[]string{"fit", "-h"}, []string{"Usage: retrainer fit"}},
		{[]string{"eval", "-h"}, []string{"$MIMLSTREAM_RETRAINER_EVAL_FOLDS"}},
		{[]string{"eval", "--help"}, []string{"--list-params", "--list-params KIND prints the --param keys"}},
	}
	for _, tc := range tests {
		code, _, stderr := runArgs(t, tc.args...)
		if code != 0 {
			t.Errorf("retrainer %q exits %d, want 0; stderr:\n%s", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("retrainer %q: stderr lacks %q:\n%s", tc.args, w, stderr)
			}
		}
	}
}

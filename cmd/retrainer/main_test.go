package main

import (
	"strings"
	"testing"
)

// TestExitCodes checks the serve and fit subcommands follow the exit-code
// convention of every command (cli.ExitCode): usage errors exit 2, failed
// work 1. The eval subcommand's are in TestEvalUsage.
func TestExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"serve", "--bogus"}, 2, "bogus"},
		{[]string{"serve", "--model", "echo"}, 2, "retrainer serve: --brokers is required"},
		{[]string{"serve", "--brokers", "127.0.0.1:1", "--model", "nope"}, 2, `retrainer serve: unknown model kind "nope"`},
		{[]string{"serve", "--brokers", "127.0.0.1:1", "--param", "novalue"}, 2, "key=value"},
		{[]string{"serve", "--brokers", "127.0.0.1:1", "--model", "echo", "extra"}, 2, `unexpected arguments ["extra"]`},
		{[]string{"fit", "--model", "echo"}, 2, "retrainer fit: --data is required"},
		{[]string{"fit", "--data", "x.jsonl", "--model", "nope"}, 2, `retrainer fit: unknown model kind "nope"`},
		{[]string{"fit", "--data", "missing.jsonl", "--model", "echo"}, 1, "missing.jsonl"},
	}
	for _, tc := range tests {
		code, _, stderr := runArgs(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("retrainer %q exits %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

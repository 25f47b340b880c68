package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestParseEnv(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{name: "default", want: "a"},
		{name: "env", env: map[string]string{"MIMLSTREAM_ANNOTATOR_BROKERS": "b"}, want: "b"},
		{name: "flag wins", args: []string{"--brokers", "c"}, env: map[string]string{"MIMLSTREAM_ANNOTATOR_BROKERS": "b"}, want: "c"},
		{name: "bad env", env: map[string]string{"MIMLSTREAM_ANNOTATOR_WORKERS": "x"}, want: "a", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := NewFlagSet("annotator", "test", io.Discard)
			b := fs.String("brokers", "a", "")
			fs.Int("workers", 1, "")
			err := parse(fs, tc.args, func(f string) string { return EnvName(fs.Name(), f) }, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if *b != tc.want {
				t.Fatalf("brokers = %q, want %q", *b, tc.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	fs := NewFlagSet("ingest", "test", io.Discard)
	if err := parse(fs, []string{"--help"}, func(f string) string { return EnvName(fs.Name(), f) }, func(string) (string, bool) { return "", false }); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want ErrHelp", err)
	}
}

// TestExitCode checks the exit-code convention every command follows.
func TestExitCode(t *testing.T) {
	failure := errors.New("broker down")
	tests := []struct {
		name   string
		err    error
		code   int
		stderr string
	}{
		{"success", nil, ExitOK, ""},
		{"help", flag.ErrHelp, ExitOK, ""},
		{"wrapped help", fmt.Errorf("x: %w", flag.ErrHelp), ExitOK, ""},
		{"failure", failure, ExitFailure, "cmd: broker down\n"},
		{"wrapped failure", fmt.Errorf("connect: %w", failure), ExitFailure, "cmd: connect: broker down\n"},
		{"usage", Usagef("--brokers is required"), ExitUsage, "cmd: --brokers is required\n"},
		{"marked usage", Usage(errors.New("bad flag")), ExitUsage, "cmd: bad flag\n"},
		{"wrapped usage", fmt.Errorf("serve: %w", Usagef("--model %q", "x")), ExitUsage, "cmd: serve: --model \"x\"\n"},
		{"usage sentinel", fmt.Errorf("%w: unexpected arguments", ErrUsage), ExitUsage, "cmd: usage error: unexpected arguments\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := ExitCode("cmd", &stderr, tc.err); code != tc.code || stderr.String() != tc.stderr {
				t.Errorf("ExitCode(%v) = %d, stderr %q; want %d, %q", tc.err, code, stderr.String(), tc.code, tc.stderr)
			}
		})
	}
	// Marking is idempotent and leaves nil and help alone.
	if Usage(nil) != nil || Usage(flag.ErrHelp) != flag.ErrHelp {
		t.Error("Usage changed nil or flag.ErrHelp")
	}
	if u := Usage(Usagef("x")); u.Error() != "x" {
		t.Errorf("doubly marked message %q", u.Error())
	}
}

// TestParseErrorsAreUsageErrors: an unknown flag and a bad value in the
// environment exit 2, help exits 0.
func TestParseErrorsAreUsageErrors(t *testing.T) {
	fs := NewFlagSet("ingest", "test", io.Discard)
	fs.Int("workers", 1, "")
	if err := Parse(fs, []string{"--bogus"}); !errors.Is(err, ErrUsage) {
		t.Errorf("unknown flag: %v, want a usage error", err)
	}
	t.Setenv("MIMLSTREAM_INGEST_WORKERS", "x")
	fs = NewFlagSet("ingest", "test", io.Discard)
	fs.Int("workers", 1, "")
	if err := Parse(fs, nil); !errors.Is(err, ErrUsage) {
		t.Errorf("bad environment value: %v, want a usage error", err)
	}
	fs = NewFlagSet("ingest", "test", io.Discard)
	if err := Parse(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) || errors.Is(err, ErrUsage) {
		t.Errorf("help: %v", err)
	}
}

// TestBadFlagIsOneLine: a bad flag value or an unknown flag is one line
// on stderr, the error with a hint, not the whole help (which --help
// still prints, once).
func TestBadFlagIsOneLine(t *testing.T) {
	for _, args := range [][]string{{"--rate", "abc"}, {"--bogus"}, {"--rate"}} {
		var out, stderr strings.Builder
		fs := NewFlagSet("cmd", "Usage: cmd [flags]\n\nA long synopsis.", &out)
		fs.Float64("rate", 0, "bags per second")
		err := Parse(fs, args)
		code := ExitCode("cmd", &stderr, err)
		if code != ExitUsage || out.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "--help") {
			t.Errorf("%q: exit %d, printed %q and %q; want exit 2 and one line naming --help", args, code, out.String(), stderr.String())
		}
	}
	var out strings.Builder
	fs := NewFlagSet("cmd", "Usage: cmd [flags]", &out)
	if err := Parse(fs, []string{"--help"}); !errors.Is(err, flag.ErrHelp) || strings.Count(out.String(), "Usage: cmd") != 1 {
		t.Errorf("--help: %v, printed %q", err, out.String())
	}
}

package cli

import (
	"errors"
	"flag"
	"io"
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
			err := parse(fs, tc.args, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
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
	if err := parse(fs, []string{"--help"}, func(string) (string, bool) { return "", false }); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want ErrHelp", err)
	}
}

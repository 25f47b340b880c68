package redisflag

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

// flagNames returns the names of fs's flags, sorted.
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	slices.Sort(names)
	return names
}

// TestRegisterKeepsTheRedisFlags: Register still gives the registry's
// flags their names, and RegisterAs gives another Redis the same set under
// its own name.
func TestRegisterKeepsTheRedisFlags(t *testing.T) {
	settings := []string{"", "-cluster", "-db", "-password", "-password-file", "-tls", "-tls-ca", "-tls-cert",
		"-tls-insecure", "-tls-key", "-tls-server-name", "-username"}
	named := func(name string, extra ...string) []string {
		out := slices.Clone(extra)
		for _, s := range settings {
			out = append(out, name+s)
		}
		slices.Sort(out)
		return out
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c := Default()
	c.Register(fs)
	if got, want := flagNames(fs), named("redis", "registry-prefix"); !slices.Equal(got, want) {
		t.Errorf("Register: %q\nwant %q", got, want)
	}
	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	var fc Config
	fc.RegisterAs(fs, "feature-cache-redis", "")
	if got, want := flagNames(fs), named("feature-cache-redis"); !slices.Equal(got, want) {
		t.Errorf("RegisterAs: %q\nwant %q", got, want)
	}
}

// TestRegisterAsParses: every flag registered under another name, on the
// command line or from its environment variable, lands in the Config and
// in its Options.
func TestRegisterAsParses(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want Options
	}{
		{"flags", []string{"--cache-redis", "h:1", "--cache-redis-cluster", "--cache-redis-username", "u",
			"--cache-redis-password", "p", "--cache-redis-db", "3", "--cache-redis-tls-ca", "ca.pem",
			"--cache-redis-tls-cert", "c.pem", "--cache-redis-tls-key", "k.pem", "--cache-redis-tls-server-name", "r.internal",
			"--cache-redis-tls-insecure", "--cache-redis-tls"},
			nil,
			Options{Addr: "h:1", Cluster: true, Username: "u", Password: "p", DB: 3, TLS: true, TLSCAFile: "ca.pem",
				TLSCertFile: "c.pem", TLSKeyFile: "k.pem", TLSServerName: "r.internal", TLSInsecureSkipVerify: true}},
		{"password file", []string{"--cache-redis", "h:1", "--cache-redis-password-file", pwFile}, nil,
			Options{Addr: "h:1", Password: "file-secret"}},
		{"environment", nil,
			map[string]string{"MIMLSTREAM_X_CACHE_REDIS": "h:2", "MIMLSTREAM_X_CACHE_REDIS_PASSWORD_FILE": pwFile, "MIMLSTREAM_X_CACHE_REDIS_DB": "5"},
			Options{Addr: "h:2", Password: "file-secret", DB: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := cli.NewFlagSet("x", "", io.Discard)
			var c Config
			c.RegisterAs(fs, "cache-redis", "")
			if err := cli.Parse(fs, tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := c.Options()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%+v\nwant %+v", got, tc.want)
			}
			if err := c.CheckOptional(); err != nil {
				t.Errorf("CheckOptional: %v", err)
			}
		})
	}
}

// TestUsageErrorsNameTheRegisteredFlags: a usage error of a Redis
// registered under another name names its flags, not --redis's; one of
// the registry's Redis still names --redis's.
func TestUsageErrorsNameTheRegisteredFlags(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string // with NAME for the flags' name
	}{
		{[]string{"--NAME", "h:1", "--NAME-tls-cert", "c.pem"}, "--NAME-tls-cert and --NAME-tls-key go together"},
		{[]string{"--NAME", "h:1", "--NAME-password", "p", "--NAME-password-file", pwFile}, "by --NAME-password (or its environment variable) or by --NAME-password-file"},
		{[]string{"--NAME", "h:1", "--NAME-password-file", filepath.Join(dir, "missing")}, "--NAME-password-file: open "},
		{[]string{"--NAME", "redis://a:1,redis://b:2"}, "--NAME: a list of cluster nodes"},
		{[]string{"--NAME", "redis://h:x/y"}, "--NAME: "},
		{[]string{"--NAME", "", "--NAME-password-file", pwFile}, "--NAME-password-file is given without --NAME"},
		{[]string{"--NAME", "", "--NAME-tls-insecure"}, "--NAME-tls-insecure is given without --NAME"},
	} {
		for _, name := range []string{"feature-cache-redis", "redis"} {
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "NAME", name)
			}
			want := strings.ReplaceAll(tc.want, "NAME", name)
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			c := Default()
			if name == "redis" {
				c.Register(fs)
			} else {
				c.RegisterAs(fs, name, "")
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			err := c.CheckOptional()
			if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), want) {
				t.Errorf("%q: %v; want a usage error with %q", args, err, want)
			}
			if name != "redis" && err != nil && strings.Contains(err.Error(), "--redis") {
				t.Errorf("%q: %v names --redis's flags", args, err)
			}
		}
	}
}

// TestConnectNamesTheRegisteredFlags: against a real redis-server that
// requires a password, a Redis registered under another name connects
// with the password from its --NAME-password-file, and a wrong one ends
// Connect at once with ErrAuth naming that Redis's flags, without the
// password.
func TestConnectNamesTheRegisteredFlags(t *testing.T) {
	addr := redistest.StartPasswordRedis(t, "right-password")
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name, pw string
		ok       bool
	}{
		{"right", "right-password\n", true},
		{"wrong", "wrong-password\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pwFile := filepath.Join(dir, tc.name)
			if err := os.WriteFile(pwFile, []byte(tc.pw), 0o600); err != nil {
				t.Fatal(err)
			}
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			var c Config
			c.RegisterAs(fs, "cache-redis", "")
			if err := fs.Parse([]string{"--cache-redis", addr, "--cache-redis-password-file", pwFile}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			rdb, err := c.Connect(ctx, log)
			took := time.Since(start)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				defer rdb.Close()
				if err := rdb.Set(ctx, "redisflag-registeras", "v", time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
				return
			}
			t.Logf("%v after %v", err, took.Round(time.Millisecond))
			if rdb != nil {
				rdb.Close()
			}
			if !errors.Is(err, ErrAuth) || took > 3*time.Second {
				t.Fatalf("%v after %v; want ErrAuth at once", err, took)
			}
			msg := err.Error()
			if !strings.Contains(msg, "--cache-redis-password-file") || strings.Contains(msg, "--redis-") || strings.Contains(msg, "wrong-password") {
				t.Errorf("the error should name --cache-redis-password-file, not --redis's flags nor the password: %v", err)
			}
		})
	}
}

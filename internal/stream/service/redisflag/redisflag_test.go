package redisflag

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

func TestRedisOptions(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		in   Config
		want Options
	}{
		{Config{Addr: "h:1", Password: "p", DB: 3}, Options{Addr: "h:1", Password: "p", DB: 3}},
		{Config{Addr: "redis://u:pw@h:6380/2"}, Options{Addr: "h:6380", Username: "u", Password: "pw", DB: 2}},
		{Config{Addr: "rediss://h:6380"}, Options{Addr: "h:6380", TLS: true}},
		{Config{Addr: "redis://h:6380", Password: "flag"}, Options{Addr: "h:6380", Password: "flag"}},
		{Config{Addr: "redis://h:6380", DB: 4}, Options{Addr: "h:6380", DB: 4}},
		{Config{Addr: "redis://h:6380/1", DB: 4}, Options{Addr: "h:6380", DB: 1}},
		{Config{Addr: "h:1", PasswordFile: pwFile}, Options{Addr: "h:1", Password: "from-file"}},
		{Config{Addr: "a:1,b:2,c:3"}, Options{Addr: "a:1,b:2,c:3"}},
		{Config{Addr: "a:1", Cluster: true}, Options{Addr: "a:1", Cluster: true}},
		{Config{Addr: "rediss://h:1", TLSCA: "ca.pem", TLSCert: "c.pem", TLSKey: "k.pem", TLSServerName: "redis.internal"},
			Options{Addr: "h:1", TLS: true, TLSCAFile: "ca.pem", TLSCertFile: "c.pem", TLSKeyFile: "k.pem", TLSServerName: "redis.internal"}},
		{Config{Addr: "h:1", TLSInsecure: true}, Options{Addr: "h:1", TLSInsecureSkipVerify: true}},
	}
	for _, c := range cases {
		got, err := c.in.Options()
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.in.Addr, got, c.want)
		}
	}
	bad := []Config{
		{Addr: "redis://h:x/y"},
		{Addr: "h:1", Password: "p", PasswordFile: pwFile},
		{Addr: "h:1", PasswordFile: filepath.Join(dir, "missing")},
		{Addr: "h:1", TLSCert: "c.pem"},
		{Addr: "redis://a:1,redis://b:2"},
	}
	for _, c := range bad {
		if _, err := c.Options(); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("%+v: %v, want a usage error", c, err)
		}
	}
}

// TestPasswordFromEnvironment: the password comes from
// MIMLSTREAM_<COMMAND>_REDIS_PASSWORD like every flag, or from a file
// named by MIMLSTREAM_<COMMAND>_REDIS_PASSWORD_FILE.
func TestPasswordFromEnvironment(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("file-secret\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ env, value, want string }{
		{"MIMLSTREAM_ANNOTATOR_REDIS_PASSWORD", "env-secret", "env-secret"},
		{"MIMLSTREAM_ANNOTATOR_REDIS_PASSWORD_FILE", pwFile, "file-secret"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			fs := cli.NewFlagSet("annotator", "", io.Discard)
			c := Default()
			c.Register(fs)
			if err := cli.Parse(fs, nil); err != nil {
				t.Fatal(err)
			}
			o, err := c.Options()
			if err != nil || o.Password != tc.want {
				t.Errorf("password %q, %v; want %q", o.Password, err, tc.want)
			}
		})
	}
}

// TestConnectCluster: a comma-separated list of nodes connects to a real
// Redis Cluster, and the log line says so.
func TestConnectCluster(t *testing.T) {
	addrs := redistest.StartCluster(t)
	var log strings.Builder
	c := Config{Addr: strings.Join(addrs, ",")}
	rdb, err := c.Connect(context.Background(), slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := rdb.Set(context.Background(), "{redisflag}:k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "cluster=true") {
		t.Errorf("log does not say cluster: %s", log.String())
	}
}

// TestConnectRetriesWithoutLeaking: Connect waits for Redis until ctx ends,
// logging each failure without the password.
func TestConnectRetriesWithoutLeaking(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var log strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	c := Config{Addr: addr, Password: "unused-secret"}
	if _, err := c.Connect(ctx, slog.New(slog.NewTextHandler(&log, nil))); err == nil {
		t.Fatal("Connect to a closed port succeeded")
	}
	if !strings.Contains(log.String(), "redis unavailable; retrying") {
		t.Errorf("no retry logged: %s", log.String())
	}
	if strings.Contains(log.String(), "unused-secret") {
		t.Errorf("log leaks the password: %s", log.String())
	}
}

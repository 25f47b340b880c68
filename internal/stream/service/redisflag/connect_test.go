package redisflag

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/testsupport/realpart"
	"github.com/mimlstream/mimlstream/internal/testsupport/tlstest"
)

// startTLSRedis starts a redis-server that speaks only TLS, with a
// certificate signed by ca, requires a client certificate signed by ca, and
// a password. When redis-server is missing or built without TLS the test
// stops (realpart.Missing: fails under CI=true, skipped elsewhere).
func startTLSRedis(t *testing.T, ca *tlstest.CA, password string) string {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		realpart.Missing(t, "redis-server is not installed (apt-get install redis-server)")
	}
	srv := ca.Server(t, "redis")
	port := freePort(t)
	dir := t.TempDir()
	cmd := exec.Command(server, "--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--tls-cert-file", srv.CertFile, "--tls-key-file", srv.KeyFile, "--tls-ca-cert-file", ca.File,
		"--tls-auth-clients", "yes", "--requirepass", password,
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			realpart.Missing(t, "redis-server exited at start (built without TLS?): %v", err)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server TLS port %s not open", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestConnectTLS connects to a real TLS-only Redis that requires a client
// certificate: the CA file, the client certificate and key, the server name
// and the password each matter, and each mistake fails Dial with an
// error that says what went wrong.
func TestConnectTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "redis-ca")
	addr := startTLSRedis(t, ca, "s3cret")
	client := ca.Client(t, "annotator")
	otherCA := tlstest.NewCA(t, "other-ca")
	stranger := otherCA.Client(t, "stranger")
	good := Options{Addr: addr, Password: "s3cret", TLSCAFile: ca.File, TLSCertFile: client.CertFile, TLSKeyFile: client.KeyFile}
	with := func(f func(*Options)) Options { o := good; f(&o); return o }
	cases := []struct {
		name    string
		o       Options
		wantErr string // "" for success
	}{
		{"CA, client certificate, password", good, ""},
		{"server name given", with(func(o *Options) { o.TLSServerName = "localhost" }), ""},
		{"insecure without CA", with(func(o *Options) { o.TLSCAFile = ""; o.TLSInsecureSkipVerify = true }), ""},
		{"wrong server name", with(func(o *Options) { o.TLSServerName = "redis.example.com" }), "certificate"},
		{"untrusted server (system pool)", with(func(o *Options) { o.TLSCAFile = "" }), "certificate"},
		{"CA of another authority", with(func(o *Options) { o.TLSCAFile = otherCA.File }), "certificate"},
		{"no client certificate", with(func(o *Options) { o.TLSCertFile, o.TLSKeyFile = "", "" }), "ping"},
		{"client certificate of another authority", with(func(o *Options) { o.TLSCertFile, o.TLSKeyFile = stranger.CertFile, stranger.KeyFile }), "ping"},
		{"wrong password", with(func(o *Options) { o.Password = "guess" }), "WRONGPASS"},
		{"plaintext against TLS", with(func(o *Options) {
			o.TLSCAFile, o.TLSCertFile, o.TLSKeyFile = "", "", ""
		}), "ping"},
		{"certificate without key", with(func(o *Options) { o.TLSKeyFile = "" }), "both its certificate and its key"},
		{"missing CA file", with(func(o *Options) { o.TLSCAFile = filepath.Join(t.TempDir(), "none.pem") }), "redis TLS CA"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			rdb, err := Dial(ctx, tc.o)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer rdb.Close()
				if err := rdb.Set(ctx, "tls-test", "over TLS", time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
				if v, err := rdb.Get(ctx, "tls-test").Result(); err != nil || v != "over TLS" {
					t.Fatalf("read back %q, %v", v, err)
				}
				return
			}
			if err == nil {
				rdb.Close()
				t.Fatalf("Dial succeeded, want an error mentioning %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not mention %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "guess") {
				t.Errorf("error %q leaks the password", err)
			}
		})
	}
}

func TestOptionsLogValueHidesPassword(t *testing.T) {
	o := Options{Addr: "a:1,b:2", Password: "hunter2", TLSCertFile: "c.pem", TLSKeyFile: "k.pem"}
	s := o.String()
	if strings.Contains(s, "hunter2") || !strings.Contains(s, "cluster=true") || !strings.Contains(s, "password=true") {
		t.Errorf("LogValue = %s", s)
	}
}

func TestConnectClusterRefusesDB(t *testing.T) {
	if _, err := Dial(t.Context(), Options{Addr: "127.0.0.1:1,127.0.0.1:2", DB: 3}); err == nil || !strings.Contains(err.Error(), "only database 0") {
		t.Errorf("cluster with db 3: %v", err)
	}
}

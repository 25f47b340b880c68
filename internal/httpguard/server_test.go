package httpguard

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/syncbuf"
	"github.com/mimlstream/mimlstream/internal/testsupport/tlstest"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestListenFailures: a taken address fails Listen naming it; a
// certificate that cannot be loaded fails it before anything is bound.
func TestListenFailures(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if _, err := Listen(ServerConfig{Addr: taken.Addr().String()}); err == nil || !strings.Contains(err.Error(), "listen "+taken.Addr().String()) {
		t.Errorf("Listen on a taken address = %v, want the listen error", err)
	}
	free := freeAddr(t)
	if _, err := Listen(ServerConfig{Addr: free, CertFile: "/nonexistent/cert.pem", KeyFile: "/nonexistent/key.pem"}); err == nil || !strings.Contains(err.Error(), "TLS certificate") {
		t.Errorf("Listen with a missing certificate = %v, want the certificate's error", err)
	}
	ln, err := net.Listen("tcp", free)
	if err != nil {
		t.Fatalf("Listen with a bad certificate left %s bound: %v", free, err)
	}
	ln.Close()
}

// TestNewServerDefaults: a zero Timeouts is DefaultTimeouts, never a
// server without timeouts; given ones are kept.
func TestNewServerDefaults(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := DefaultTimeouts()
	s := NewServer(ln, ServerConfig{})
	if got := (Timeouts{s.srv.ReadHeaderTimeout, s.srv.ReadTimeout, s.srv.WriteTimeout, s.srv.IdleTimeout}); got != d {
		t.Errorf("zero timeouts made %+v, want %+v", got, d)
	}
	mine := Timeouts{ReadHeader: time.Second, Read: 2 * time.Second, Write: 3 * time.Second, Idle: 4 * time.Second}
	s = NewServer(ln, ServerConfig{Timeouts: mine})
	if got := (Timeouts{s.srv.ReadHeaderTimeout, s.srv.ReadTimeout, s.srv.WriteTimeout, s.srv.IdleTimeout}); got != mine {
		t.Errorf("timeouts %+v, want %+v", got, mine)
	}
}

// TestServeDrainsInFlight: when ctx ends, a request in flight is answered
// before Serve returns nil, and no new connection is taken meanwhile.
func TestServeDrainsInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s, err := Listen(ServerConfig{Addr: "127.0.0.1:0", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			once.Do(func() { close(entered) })
			<-release
		}
		fmt.Fprintln(w, "ok")
	})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	url := "http://" + s.Addr().String()
	answered := make(chan error, 1)
	go func() {
		resp, err := http.Get(url + "/slow")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		answered <- err
	}()
	<-entered
	cancel()
	// Shutdown closes the listener at once, then waits for the request.
	streamtest.WaitFor(t, 5*time.Second, "the listener closed", func() bool {
		c, err := net.DialTimeout("tcp", s.Addr().String(), time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}
	close(release)
	if err := <-answered; err != nil {
		t.Errorf("the request in flight: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v after a clean close", err)
	}
}

// TestServeTLS: with a certificate, a client trusting its CA is served;
// a plaintext client is not, and net/http's complaint about it reaches
// the logger as a structured WARN line.
func TestServeTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "httpguard")
	leaf := ca.Server(t, "httpguard")
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s, err := Listen(ServerConfig{Addr: "127.0.0.1:0", CertFile: leaf.CertFile, KeyFile: leaf.KeyFile, Log: log,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve = %v", err)
		}
	}()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	resp, err := client.Get("https://" + s.Addr().String() + "/")
	if err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("TLS client: status %d", resp.StatusCode)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + s.Addr().String() + "/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plaintext HTTP served by a TLS server")
		}
	}
	streamtest.WaitFor(t, 5*time.Second, "a WARN line for the plaintext client's handshake", func() bool {
		return strings.Contains(logs.String(), `level=WARN msg="http: TLS handshake error`)
	})
}

// TestRefusedWhileSending: a request refused by LimitConcurrency while
// its body is still arriving (a slow sender) gets its 503 at once, not
// once it has sent the body the server would otherwise read first.
func TestRefusedWhileSending(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	s, err := Listen(ServerConfig{Addr: "127.0.0.1:0", Handler: LimitConcurrency(1, time.Second, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		entered <- struct{}{}
		<-release
	}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = s.Serve(ctx) }()
	url := "http://" + s.Addr().String()
	go func() {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = pw.Write([]byte("the first bytes of a body that goes on")) }()
	answered := make(chan int, 1)
	go func() {
		resp, err := http.Post(url, "application/json", pr)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	select {
	case code := <-answered:
		if code != http.StatusServiceUnavailable {
			t.Errorf("status %d, want 503", code)
		}
	case <-time.After(3 * time.Second):
		t.Error("no answer within 3 s while the body was still arriving")
	}
}

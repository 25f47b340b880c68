package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/httpguard"
)

var quiet = slog.New(slog.DiscardHandler)

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
}

func get(addr string) error {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestRunListenerCannotBind: a taken address fails the service before its
// work starts.
func TestRunListenerCannotBind(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free := freeAddr(t)
	started := false
	err = Run(context.Background(), quiet, func(context.Context) error { started = true; return nil },
		Server{Addr: free, Handler: okHandler()}, Server{Addr: taken.Addr().String(), Handler: okHandler()})
	if err == nil || !strings.Contains(err.Error(), "listen "+taken.Addr().String()) {
		t.Fatalf("Run = %v, want the listen error", err)
	}
	if started {
		t.Error("the work started although a listener could not bind")
	}
	// The listener bound before the failing one was released.
	ln, err := net.Listen("tcp", free)
	if err != nil {
		t.Fatalf("the first listener was not closed: %v", err)
	}
	ln.Close()
}

// TestRunDrainsBeforeClosingListeners: when ctx ends (SIGTERM), the work
// drains while the servers still answer; then they close and Run returns
// nil.
func TestRunDrainsBeforeClosingListeners(t *testing.T) {
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	up := make(chan struct{})
	var drainErr error
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, quiet, func(ctx context.Context) error {
			close(up)
			<-ctx.Done()
			// Draining: the listener must still serve.
			drainErr = get(addr)
			return nil
		}, Server{Addr: addr, Handler: okHandler()})
	}()
	<-up
	if err := get(addr); err != nil {
		t.Fatalf("server not answering while running: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v after a clean stop", err)
	}
	if drainErr != nil {
		t.Errorf("server not answering during the drain: %v", drainErr)
	}
	if err := get(addr); err == nil {
		t.Error("server still answers after Run returned")
	}
}

// TestRunWorkFailureStopsServers: the work failing stops the service with
// its error and closes the listeners.
func TestRunWorkFailureStopsServers(t *testing.T) {
	addr := freeAddr(t)
	boom := errors.New("consumer loop failed")
	err := Run(context.Background(), quiet, func(context.Context) error {
		if err := get(addr); err != nil {
			return fmt.Errorf("server not up: %w", err)
		}
		return boom
	}, Server{Addr: addr, Handler: okHandler()})
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want the work's error", err)
	}
	if err := get(addr); err == nil {
		t.Error("server still answers after the work failed")
	}
}

// failingListener accepts nothing: Accept fails once the test says so, as a
// listener whose socket breaks would.
type failingListener struct {
	net.Listener
	fail chan struct{}
	once sync.Once
}

func (l *failingListener) Accept() (net.Conn, error) {
	<-l.fail
	return nil, errors.New("accept: socket broken")
}

func (l *failingListener) Close() error {
	l.once.Do(func() { close(l.fail) })
	return l.Listener.Close()
}

// TestRunServerFailureStopsWork: a server failing while the service runs
// ends the work's context; Run returns the server's error once the work has
// drained.
func TestRunServerFailureStopsWork(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &failingListener{Listener: inner, fail: make(chan struct{})}
	drained := false
	go func() {
		time.Sleep(50 * time.Millisecond)
		ln.once.Do(func() { close(ln.fail) })
	}()
	err = runGroup(context.Background(), func(ctx context.Context) error {
		<-ctx.Done()
		drained = true
		return nil
	}, []*httpguard.Server{httpguard.NewServer(ln, httpguard.ServerConfig{Handler: okHandler()})})
	if err == nil || !strings.Contains(err.Error(), "socket broken") {
		t.Fatalf("Run = %v, want the server's error", err)
	}
	if !drained {
		t.Error("the work did not drain")
	}
}

// TestRunWithoutServers: the work alone; its nil or error is Run's.
func TestRunWithoutServers(t *testing.T) {
	if err := Run(context.Background(), quiet, func(context.Context) error { return nil }, Server{}); err != nil {
		t.Errorf("Run = %v", err)
	}
	boom := errors.New("boom")
	if err := Run(context.Background(), quiet, func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Run = %v, want %v", err, boom)
	}
}

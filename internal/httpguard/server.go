package httpguard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ShutdownTimeout bounds a server's graceful close: how long the requests
// in flight have to finish once it stops taking connections.
const ShutdownTimeout = 5 * time.Second

// ServerConfig is an HTTP server of a service: what it serves, where, and
// how long a client may hold a connection.
type ServerConfig struct {
	Addr    string
	Handler http.Handler
	// Timeouts bound a client's connection; zero: DefaultTimeouts.
	Timeouts Timeouts
	// CertFile and KeyFile, when set, switch TLS on (1.2 at least).
	CertFile, KeyFile string
	// Log, when set, takes net/http's own complaints (a failed TLS
	// handshake, a client breaking the protocol) at WARN instead of the
	// standard log package's unstructured stderr.
	Log *slog.Logger
}

// Server is an HTTP server bound to its listener: every server of the
// project (the ingest endpoint; health, readiness and metrics; the status
// page) is bound, served and shut down through it.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen loads the certificate, when one is configured, and binds
// cfg.Addr, so that a bad certificate or a taken address fails the
// command before anything else runs. Serve serves it; Close releases a
// server never served.
func Listen(cfg ServerConfig) (*Server, error) {
	var tc *tls.Config
	if cfg.CertFile != "" || cfg.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS certificate: %w", err)
		}
		tc = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	s := NewServer(ln, cfg)
	s.srv.TLSConfig = tc
	return s, nil
}

// NewServer serves cfg.Handler on a listener already bound (cfg.Addr,
// CertFile and KeyFile are not read): Listen's second half, and a test's
// way to serve on a listener of its own.
func NewServer(ln net.Listener, cfg ServerConfig) *Server {
	t := cfg.Timeouts
	if t == (Timeouts{}) {
		t = DefaultTimeouts()
	}
	srv := t.Server(cfg.Addr, cfg.Handler)
	if cfg.Log != nil {
		srv.ErrorLog = slog.NewLogLogger(cfg.Log.Handler(), slog.LevelWarn)
	}
	return &Server{ln: ln, srv: srv}
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx ends, then stops taking connections and waits up
// to ShutdownTimeout for the requests in flight. It returns nil after a
// clean close, the error of a listener that fails while serving (at once),
// or the error of a close that cut requests off.
func (s *Server) Serve(ctx context.Context) error {
	served := make(chan error, 1)
	go func() { served <- s.srv.Serve(s.ln) }()
	select {
	case err := <-served:
		// Serve returns before Shutdown only when it fails.
		return fmt.Errorf("http %s: %w", s.ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("http %s: %w", s.ln.Addr(), serr)
	}
	if err != nil {
		return fmt.Errorf("http %s: shutdown: %w", s.ln.Addr(), err)
	}
	return nil
}

// Close releases the listener of a server that is not served.
func (s *Server) Close() error { return s.ln.Close() }

package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mimlstream/mimlstream/internal/httpguard"
)

// Server is an HTTP listener of a service (health, readiness, metrics, the
// ingest endpoint). An empty Addr means none.
type Server struct {
	Addr    string
	Handler http.Handler
}

// shutdownTimeout bounds the graceful close of a listener after the work
// has returned.
const shutdownTimeout = 5 * time.Second

// Run runs a service as one group: its work (the consumer loop, say) and its
// HTTP servers.
//
//   - The listeners bind first: an address that cannot be bound fails the
//     service before its work starts (before it joins a consumer group).
//   - The work's context ends when ctx does (SIGTERM) or when a server
//     fails; the work then drains and returns.
//   - The servers keep answering until the work has returned, so /healthz
//     and /metrics stay up through the drain, then close gracefully.
//
// Run returns the first error of any member, or nil when the work returned
// nil (drained after ctx ended, or done) and the servers closed cleanly.
func Run(ctx context.Context, log *slog.Logger, work func(context.Context) error, servers ...Server) error {
	var bound []boundServer
	for _, s := range servers {
		if s.Addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", s.Addr)
		if err != nil {
			for _, b := range bound {
				b.ln.Close()
			}
			return fmt.Errorf("listen %s: %w", s.Addr, err)
		}
		log.Info("http listening", "addr", ln.Addr().String())
		// The same timeouts as every server of the project: a client that
		// trickles a request to /metrics is cut off like one to /bags.
		bound = append(bound, boundServer{ln: ln, srv: httpguard.DefaultTimeouts().Server("", s.Handler)})
	}
	return runGroup(ctx, log, work, bound)
}

type boundServer struct {
	ln  net.Listener
	srv *http.Server
}

func runGroup(ctx context.Context, log *slog.Logger, work func(context.Context) error, servers []boundServer) error {
	g, gctx := errgroup.WithContext(ctx)
	workDone := make(chan struct{})
	g.Go(func() error {
		defer close(workDone)
		return work(gctx)
	})
	for _, s := range servers {
		addr := s.ln.Addr().String()
		g.Go(func() error {
			served := make(chan error, 1)
			go func() { served <- s.srv.Serve(s.ln) }()
			select {
			case err := <-served:
				// Serve returns before Shutdown only when it fails.
				return fmt.Errorf("http %s: %w", addr, err)
			case <-workDone:
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			defer cancel()
			if err := s.srv.Shutdown(sctx); err != nil {
				log.Warn("http shutdown", "addr", addr, "err", err)
			}
			if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("http %s: %w", addr, err)
			}
			return nil
		})
	}
	return g.Wait()
}

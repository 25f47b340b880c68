package service

import (
	"context"
	"log/slog"
	"net/http"

	"golang.org/x/sync/errgroup"

	"github.com/mimlstream/mimlstream/internal/httpguard"
)

// Server is an HTTP listener of a service (health, readiness, metrics, the
// ingest endpoint). An empty Addr means none.
type Server struct {
	Addr    string
	Handler http.Handler
	// Timeouts bound a client's connection; zero: httpguard's defaults,
	// so a client that trickles a request to /metrics is cut off like one
	// to /bags.
	Timeouts httpguard.Timeouts
	// CertFile and KeyFile, when set, switch TLS on.
	CertFile, KeyFile string
}

// Run runs a service as one group: its work (the consumer loop, say) and its
// HTTP servers (httpguard.Server).
//
//   - The listeners bind first: an address that cannot be bound fails the
//     service before its work starts (before it joins a consumer group).
//   - The work's context ends when ctx does (SIGTERM) or when a server
//     fails; the work then drains and returns.
//   - The servers keep answering until the work has returned, so /healthz
//     and /metrics stay up through the drain, then close gracefully.
//   - A nil work is a service of servers alone (the ingest endpoint): they
//     serve until ctx ends.
//
// Run returns the first error of any member, or nil when the work returned
// nil (drained after ctx ended, or done) and the servers closed cleanly.
func Run(ctx context.Context, log *slog.Logger, work func(context.Context) error, servers ...Server) error {
	var bound []*httpguard.Server
	for _, s := range servers {
		if s.Addr == "" {
			continue
		}
		srv, err := httpguard.Listen(httpguard.ServerConfig{Addr: s.Addr, Handler: s.Handler, Timeouts: s.Timeouts,
			CertFile: s.CertFile, KeyFile: s.KeyFile, Log: log})
		if err != nil {
			for _, b := range bound {
				b.Close()
			}
			return err
		}
		log.Info("http listening", "addr", srv.Addr().String(), "tls", s.CertFile != "")
		bound = append(bound, srv)
	}
	if work == nil {
		work = func(ctx context.Context) error {
			<-ctx.Done()
			return nil
		}
	}
	return runGroup(ctx, work, bound)
}

func runGroup(ctx context.Context, work func(context.Context) error, servers []*httpguard.Server) error {
	g, gctx := errgroup.WithContext(ctx)
	// The servers stop once the work has returned, not when ctx ends:
	// they answer through the drain.
	serving, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	g.Go(func() error {
		defer stopServing()
		return work(gctx)
	})
	for _, s := range servers {
		g.Go(func() error { return s.Serve(serving) })
	}
	return g.Wait()
}

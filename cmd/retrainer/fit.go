package main

import (
	"context"

	"github.com/mimlstream/mimlstream/internal/stream/service"
)

// runFit is `retrainer fit`: fit on a file and publish a model version.
func runFit(ctx context.Context, e *env, args []string) error {
	return service.RunFit(ctx, service.Env{Stdout: e.stdout, Stderr: e.stderr, Kinds: e.registry}, args)
}

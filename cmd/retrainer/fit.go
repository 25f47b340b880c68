package main

import (
	"context"

	"github.com/mimlstream/mimlstream/internal/stream/retrain"
	"github.com/mimlstream/mimlstream/internal/stream/service"
)

// runFit is `retrainer fit`: fit on a file and publish a model version.
func runFit(ctx context.Context, e *env, args []string) error {
	return retrain.FitCommand(ctx, service.Env{Stdout: e.stdout, Stderr: e.stderr}, e.registry, args)
}

package main

import (
	"context"

	"github.com/mimlstream/mimlstream/internal/stream/retrain"
	"github.com/mimlstream/mimlstream/internal/stream/service"
)

// runServe is `retrainer serve`: the online retraining service.
func runServe(ctx context.Context, e *env, args []string) error {
	return retrain.ServeCommand(ctx, service.Env{Stdout: e.stdout, Stderr: e.stderr}, e.registry, args)
}

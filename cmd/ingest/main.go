// Command ingest validates bags and publishes them to the pipeline's topics,
// from dataset files, JSON lines or an HTTP endpoint. Run `ingest --help` for
// its flags and their environment variables.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mimlstream/mimlstream/internal/models/catalog"
	"github.com/mimlstream/mimlstream/internal/stream/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := service.RunIngest(ctx, service.Env{Stdout: os.Stdout, Stderr: os.Stderr, Kinds: catalog.New()}, os.Args[1:])
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(1)
	}
}

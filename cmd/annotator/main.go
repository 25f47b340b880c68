// Command annotator is the annotation service: a Kafka consumer-group member
// serving the registry's current model. Run `annotator --help` for its flags
// and their environment variables.
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
	err := service.RunAnnotator(ctx, service.Env{Stdout: os.Stdout, Stderr: os.Stderr, Kinds: catalog.New()}, os.Args[1:])
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "annotator:", err)
		os.Exit(1)
	}
}

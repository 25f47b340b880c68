// Command annotator is the annotation service: a Kafka consumer-group member
// serving the registry's current model. Run `annotator --help` for its flags
// and their environment variables.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
	"github.com/mimlstream/mimlstream/internal/stream/annotate"
	"github.com/mimlstream/mimlstream/internal/stream/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command but for the process: it returns the exit code
// (cli.ExitCode: 0 ok, 1 failure, 2 usage error).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	env := service.Env{Stdout: stdout, Stderr: stderr}
	return cli.ExitCode("annotator", stderr, annotate.Command(ctx, env, catalog.New(), args))
}

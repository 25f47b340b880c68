// Command demo runs the whole streaming annotation service in one process
// (`make demo`). Run `demo --help` for its flags.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/demo"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
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
	return cli.ExitCode("demo", stderr, demo.Run(ctx, catalog.New(), stdout, stderr, args))
}

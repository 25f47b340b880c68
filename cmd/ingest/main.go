// Command ingest validates bags and publishes them to the pipeline's topics,
// from dataset files, JSON lines or an HTTP endpoint. Run `ingest --help` for
// its flags and their environment variables.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command but for the process: it returns the exit code
// (cli.ExitCode: 0 ok, 1 failure, 2 usage error).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := service.Env{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	return cli.ExitCode("ingest", stderr, ingest.Command(ctx, env, args))
}

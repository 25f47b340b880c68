// Command mimlctl is the operator's command: a development broker, a
// readable tail of the pipeline's topics, the model registry (list, show,
// guarded promote, candidate, rollback, delete, export, import) and the
// status page. Run
// `mimlctl --help` for the list and `mimlctl <command> --help` for each
// one's flags and environment variables.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/mimlctl"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
	"github.com/mimlstream/mimlstream/internal/stream/service"
)

// command is one subcommand; run receives the arguments after its name.
type command struct {
	name, summary string
	run           func(ctx context.Context, env service.Env, args []string) error
}

func commands() []command {
	return []command{
		{"broker", "run the embedded Kafka-protocol broker on loopback, for development (until SIGTERM)", runBroker},
		{"tail", "print a topic's annotations and dead letters, readable or as JSON lines", mimlctl.TailCommand},
		{"models", "list, show, promote (guarded), shadow, roll back, delete, export and import model versions", func(ctx context.Context, env service.Env, args []string) error {
			return mimlctl.ModelsCommand(ctx, env, catalog.New(), args)
		}},
		{"status", "serve the status page: models, live quality, throughput, lag, dead letters, refits", mimlctl.StatusCommand},
		{"picture", "draw an annotated photo: its regions tinted by their labels, with a legend", mimlctl.PictureCommand},
		{"passages", "show an annotated document: each passage's label and first words, and an HTML page highlighting them", mimlctl.PassagesCommand},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, service.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and returns the exit code (cli.ExitCode:
// 0 ok or help, 1 failure, 2 usage error, no or an unknown subcommand
// included).
func run(ctx context.Context, env service.Env, args []string) int {
	if len(args) == 0 {
		usage(env.Stderr)
		return cli.ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(env.Stdout)
		return cli.ExitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return cli.ExitCode("mimlctl "+c.name, env.Stderr, c.run(ctx, env, args[1:]))
		}
	}
	fmt.Fprintf(env.Stderr, "mimlctl: unknown command %q\n\n", args[0])
	usage(env.Stderr)
	return cli.ExitUsage
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: mimlctl <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'mimlctl <command> --help' for the flags of a command.\n")
}

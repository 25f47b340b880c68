// Command retrainer trains, evaluates and serves MIML annotation models. It
// is a set of subcommands; run `retrainer --help` for the list and
// `retrainer <command> --help` for each one's flags and environment
// variables.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
)

// env is what a subcommand takes from its surroundings. Tests substitute
// their own writers and registry.
type env struct {
	stdout, stderr io.Writer
	logger         *slog.Logger
	registry       *models.Registry
}

// command is one subcommand. run receives the arguments after the
// subcommand's name; returning flag.ErrHelp means help was printed.
type command struct {
	name, summary string
	run           func(ctx context.Context, e *env, args []string) error
}

// commands lists the subcommands, in the order --help shows them. Adding
// one is one line here plus its own file.
func commands() []command {
	return []command{
		{"eval", "cross-validate a model kind on a dataset (inductive or transductive), or sweep prune/subset", runEval},
		{"serve", "follow the training topic, refit, evaluate against the current model and promote", runServe},
		{"fit", "fit a model on a dataset file and publish it to the registry (--promote to make it current)", runFit},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	e := &env{
		stdout:   os.Stdout,
		stderr:   os.Stderr,
		logger:   slog.New(slog.NewTextHandler(os.Stderr, nil)),
		registry: catalog.New(),
	}
	code := run(ctx, e, os.Args[1:])
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and returns the process exit code, by the
// convention of every command (cli.ExitCode): 0 on success or help, 1 when
// the command fails, 2 for a usage error (no or an unknown subcommand
// included).
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return cli.ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(e.stdout)
		return cli.ExitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return cli.ExitCode("retrainer "+c.name, e.stderr, c.run(ctx, e, args[1:]))
		}
	}
	fmt.Fprintf(e.stderr, "retrainer: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return cli.ExitUsage
}

// errUsage marks an error in the command line rather than in the work: the
// exit code is then 2.
var errUsage = cli.ErrUsage

func usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: retrainer <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'retrainer <command> --help' for the flags of a command.\n")
}

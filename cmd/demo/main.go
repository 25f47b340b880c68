// Command demo runs the whole streaming annotation service in one process
// (`make demo`). Run `demo --help` for its flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mimlstream/mimlstream/internal/demo"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := demo.Run(ctx, catalog.New(), os.Stdout, os.Stderr, os.Args[1:])
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

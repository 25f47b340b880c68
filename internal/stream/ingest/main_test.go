package ingest

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/stream/service"
)

// roleEnv makes the test binary run the ingest command, so a test can
// measure the memory of an ingest process alone, apart from the broker and
// the client in the test process.
const roleEnv = "MIMLSTREAM_INGEST_TEST_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "ingest" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := Command(ctx, service.Env{Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:])
		stop()
		os.Exit(cli.ExitCode("ingest", os.Stderr, err))
	}
	os.Exit(m.Run())
}

package main

import (
	"context"
	"io"
	"testing"

	"github.com/mimlstream/mimlstream/internal/stream/streamtest"
)

func TestExitCodes(t *testing.T) {
	streamtest.CheckCommand(t, "annotator", func(args []string, stdout, stderr io.Writer) int {
		return run(context.Background(), args, stdout, stderr)
	}, []streamtest.CommandCase{
		{Args: []string{"--help"}, Code: 0, Stderr: []string{"Usage: annotator", "--batch-size", "$MIMLSTREAM_ANNOTATOR_BROKERS"}},
		{Args: []string{"-h"}, Code: 0, Stderr: []string{"Usage: annotator"}},
		{Args: nil, Code: 1, Stderr: []string{"annotator: --brokers is required"}},
		{Args: []string{"--bogus"}, Code: 1, Stderr: []string{"bogus"}},
	})
}

package main

import (
	"context"
	"io"
	"testing"

	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestExitCodes covers what exits before the demo starts anything.
func TestExitCodes(t *testing.T) {
	streamtest.CheckCommand(t, "demo", func(args []string, stdout, stderr io.Writer) int {
		return run(context.Background(), args, stdout, stderr)
	}, []streamtest.CommandCase{
		{Args: []string{"--help"}, Code: 0, Stderr: []string{"Usage: demo", "--label-fraction", "$MIMLSTREAM_DEMO_RATE"}},
		{Args: []string{"-h"}, Code: 0, Stderr: []string{"Usage: demo"}},
		{Args: []string{"extra"}, Code: 2, Stderr: []string{`demo: unexpected arguments ["extra"]`}},
		{Args: []string{"--bogus"}, Code: 2, Stderr: []string{"bogus"}},
		{Args: []string{"--data", "missing.mat"}, Code: 1, Stderr: []string{"demo: ", "missing.mat"}},
	})
}

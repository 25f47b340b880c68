package main

import (
	"context"
	"io"
	"testing"

	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

func TestExitCodes(t *testing.T) {
	streamtest.CheckCommand(t, "annotator", func(args []string, stdout, stderr io.Writer) int {
		return run(context.Background(), args, stdout, stderr)
	}, []streamtest.CommandCase{
		{Args: []string{"--help"}, Code: 0, Stderr: []string{"Usage: annotator", "--batch-size", "$MIMLSTREAM_ANNOTATOR_BROKERS"}},
		{Args: []string{"-h"}, Code: 0, Stderr: []string{"Usage: annotator"}},
		{Args: nil, Code: 2, Stderr: []string{"annotator: --brokers is required"}},
		{Args: []string{"--bogus"}, Code: 2, Stderr: []string{"bogus"}},
		{Args: []string{"--brokers", "127.0.0.1:1", "--trace-exporter", "zipkin"}, Code: 2, Stderr: []string{`annotator: --trace-exporter "zipkin"`}},
		{Args: []string{"--brokers", "127.0.0.1:1", "--redis", "redis://h:x/y", "--create-topics=false"}, Code: 2, Stderr: []string{"annotator: --redis"}},
	})
}

package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

func TestExitCodes(t *testing.T) {
	streamtest.CheckCommand(t, "ingest", func(args []string, stdout, stderr io.Writer) int {
		return run(context.Background(), args, strings.NewReader(""), stdout, stderr)
	}, []streamtest.CommandCase{
		{Args: []string{"--help"}, Code: 0, Stderr: []string{"Usage: ingest", "--label-fraction", "$MIMLSTREAM_INGEST_DATA"}},
		{Args: []string{"-h"}, Code: 0, Stderr: []string{"Usage: ingest"}},
		{Args: []string{"--brokers", "127.0.0.1:1"}, Code: 2, Stderr: []string{"ingest: give exactly one of --data, --jsonl and --listen"}},
		{Args: []string{"--bogus"}, Code: 2, Stderr: []string{"bogus"}},
		{Args: []string{"--jsonl", "-"}, Code: 2, Stderr: []string{"ingest: --brokers is required"}},
		{Args: []string{"--brokers", "127.0.0.1:1", "--jsonl", "-", "extra"}, Code: 2, Stderr: []string{`ingest: unexpected arguments ["extra"]`}},
		{Args: []string{"--brokers", "127.0.0.1:1", "--jsonl", "-", "--log-level", "loud"}, Code: 2, Stderr: []string{"ingest: --log-level"}},
		// Well formed, but no broker answers on port 1: the connection
		// check at start fails, naming the broker.
		{Args: []string{"--brokers", "127.0.0.1:1", "--jsonl", "-"}, Code: 1, Stderr: []string{"ingest: kafka 127.0.0.1:1", "connection refused"}},
		{Args: []string{"--brokers", "127.0.0.1:1", "--jsonl", "-", "--kafka-sasl-mechanism", "gssapi", "--kafka-sasl-user", "u"}, Code: 2, Stderr: []string{"unknown mechanism"}},
		{Args: []string{"--brokers", "127.0.0.1:1", "--jsonl", "-", "--kafka-tls-cert", "c.pem"}, Code: 2, Stderr: []string{"--kafka-tls-cert and --kafka-tls-key go together"}},
	})
}

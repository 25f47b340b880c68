package annotate

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/signing"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestListenFailureStopsTheAnnotator: an annotator whose health address is
// taken fails (exit 1) before it joins the consumer group, rather than
// annotating without /healthz, /readyz and /metrics.
func TestListenFailureStopsTheAnnotator(t *testing.T) {
	brokers := streamtest.StartBroker(t, 1, wire.DefaultTopics().All()...)
	addr, _, _ := streamtest.StartRedis(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var stdout, stderr bytes.Buffer
	env := service.Env{Stdout: &stdout, Stderr: &stderr}
	kinds := models.NewRegistry(streamtest.CentroidKind())
	err = Command(context.Background(), env, kinds, []string{"--brokers", strings.Join(brokers, ","), "--redis", addr,
		"--listen", taken.Addr().String(), "--log-level", "warn"})
	if err == nil || errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "listen "+taken.Addr().String()) {
		t.Fatalf("annotator on a taken address: %v, want a runtime failure naming the address\n%s", err, stderr.String())
	}
	if code := cli.ExitCode("annotator", &stderr, err); code != cli.ExitFailure {
		t.Errorf("exit code %d, want %d", code, cli.ExitFailure)
	}
}

// TestVerifyKeyUnreadable: a --verify-key that cannot be read, or holds a
// private key, is a usage error reported before anything connects.
func TestVerifyKeyUnreadable(t *testing.T) {
	dir := t.TempDir()
	privPEM, _, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	priv := filepath.Join(dir, "priv.pem")
	if err := os.WriteFile(priv, privPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	kinds := models.NewRegistry(streamtest.CentroidKind())
	for _, key := range []string{filepath.Join(dir, "missing.pem"), priv} {
		var stderr bytes.Buffer
		// No broker or Redis answers at these addresses: the key must be
		// checked first.
		err := Command(context.Background(), service.Env{Stdout: &stderr, Stderr: &stderr}, kinds,
			[]string{"--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1", "--verify-key", key})
		if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "--verify-key") {
			t.Errorf("--verify-key %s: %v, want a usage error naming the flag", key, err)
		}
	}
}

// TestUnknownCompressionIsAUsageError: a codec kafka-go does not have, by
// flag or by environment, is a usage error naming the flag before anything
// connects, not a writer that fails at the first batch.
func TestUnknownCompressionIsAUsageError(t *testing.T) {
	kinds := models.NewRegistry(streamtest.CentroidKind())
	for _, tc := range []struct {
		name string
		args []string
		env  string
	}{
		{"flag", []string{"--compression", "brotli"}, ""},
		{"env", nil, "brotli"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("MIMLSTREAM_ANNOTATOR_COMPRESSION", tc.env)
			}
			var stderr bytes.Buffer
			err := Command(context.Background(), service.Env{Stdout: &stderr, Stderr: &stderr}, kinds,
				append([]string{"--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1"}, tc.args...))
			if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "compression") {
				t.Errorf("compression brotli: %v, want a usage error naming the flag", err)
			}
		})
	}
}

// TestWireFormatFlag: --wire-format (or its environment variable) takes
// json or protobuf; anything else is a usage error naming the flag before
// anything connects. Catches a typo silently served as JSON.
func TestWireFormatFlag(t *testing.T) {
	kinds := models.NewRegistry(streamtest.CentroidKind())
	var stderr bytes.Buffer
	err := Command(context.Background(), service.Env{Stdout: &stderr, Stderr: &stderr}, kinds,
		[]string{"--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1", "--wire-format", "protobuff"})
	if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "wire-format") {
		t.Errorf("--wire-format protobuff: %v, want a usage error naming the flag", err)
	}
	t.Setenv("MIMLSTREAM_ANNOTATOR_WIRE_FORMAT", "xml")
	err = Command(context.Background(), service.Env{Stdout: &stderr, Stderr: &stderr}, kinds,
		[]string{"--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1"})
	if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "wire") {
		t.Errorf("MIMLSTREAM_ANNOTATOR_WIRE_FORMAT=xml: %v, want a usage error naming it", err)
	}
	fs := flag.NewFlagSet("annotator", flag.ContinueOnError)
	c := DefaultConfig()
	c.register(fs)
	if err := fs.Parse([]string{"--wire-format", "protobuf"}); err != nil || c.WireFormat != wire.FormatProtobuf {
		t.Errorf("--wire-format protobuf: %q %v", c.WireFormat, err)
	}
}

// TestLingerFlag: --linger reaches the config, and its default is the
// annotator's own (DefaultLinger), not ingest's.
func TestLingerFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, DefaultLinger},
		{[]string{"--linger", "250us"}, 250 * time.Microsecond},
		{[]string{"--linger", "1ms"}, kafkaio.DefaultLinger},
	} {
		fs := flag.NewFlagSet("annotator", flag.ContinueOnError)
		cfg := DefaultConfig()
		cfg.register(fs)
		if err := fs.Parse(c.args); err != nil || cfg.Linger != c.want {
			t.Errorf("%q: linger %v %v, want %v", c.args, cfg.Linger, err, c.want)
		}
	}
}

package annotate

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/models"
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

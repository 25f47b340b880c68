package annotate

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestQualitySampleRateChecked: a sample rate outside [0, 1] (or NaN) is a
// usage error before anything connects, not a silently clamped rate.
func TestQualitySampleRateChecked(t *testing.T) {
	kinds := models.NewRegistry(streamtest.CentroidKind())
	for _, rate := range []string{"-0.1", "1.5", "NaN"} {
		var stderr bytes.Buffer
		err := Command(context.Background(), service.Env{Stdout: &stderr, Stderr: &stderr}, kinds,
			[]string{"--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1", "--quality-sample-rate", rate})
		if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "--quality-sample-rate") {
			t.Errorf("--quality-sample-rate %s: %v, want a usage error naming the flag", rate, err)
		}
	}
}

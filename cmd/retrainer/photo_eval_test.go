package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/baseline"
)

// runSLR runs the command with slr as the registry's one kind.
func runSLR(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	e := &env{stdout: &out, stderr: &errOut, logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		registry: models.NewRegistry(baseline.SLRKind())}
	code = run(context.Background(), e, args)
	return code, out.String(), errOut.String()
}

// TestEvalPhotoManifest runs eval on testdata's three photos: slr fitted
// on the ground-truth regions' own labels and annotating them knowing the
// bag labels paints every region right, and the report carries
// pixel_accuracy beside instance_accuracy; inherit+slr runs as a kind.
func TestEvalPhotoManifest(t *testing.T) {
	const manifest = "../../testdata/msrc_v2_sample/bags.jsonl"
	code, stdout, stderr := runSLR("eval", "--data", manifest, "--model", "slr", "--mode", "transductive", "--regions", "gt", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Instances        int `json:"instances"`
		InstanceAccuracy struct {
			Mean float64 `json:"mean"`
		} `json:"instance_accuracy"`
		PixelAccuracy *struct {
			Mean float64 `json:"mean"`
		} `json:"pixel_accuracy"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.Instances != 8 || rep.InstanceAccuracy.Mean != 1 || rep.PixelAccuracy == nil || rep.PixelAccuracy.Mean != 1 {
		t.Fatalf("report %s", stdout)
	}
	code, stdout, stderr = runSLR("eval", "--data", manifest, "--model", "inherit+slr", "--mode", "transductive")
	if code != 0 || !strings.Contains(stdout, "inherit+slr") || !strings.Contains(stdout, "pixel_accuracy") {
		t.Fatalf("inherit+slr: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := runSLR("eval", "--data", manifest, "--model", "slr", "--regions", "watershed"); code != 2 || !strings.Contains(stderr, "--regions") {
		t.Fatalf("bad --regions: exit %d: %s", code, stderr)
	}
}

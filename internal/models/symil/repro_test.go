package symil

import (
	"testing"

	"github.com/mimlstream/mimlstream/internal/testsupport/miltest"
)

// TestReproduce is the benchmark reproduction (Table IV); see package
// miltest for the command. Skipped unless MIL_REPRO is set.
func TestReproduce(t *testing.T) {
	miltest.Reproduce(t, Kind(), "../../..")
}

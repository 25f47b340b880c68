//go:build !unix

package eval

import "time"

// processCPU is not measured on this platform; the reports then carry
// wall-clock times only.
func processCPU() (time.Duration, bool) { return 0, false }

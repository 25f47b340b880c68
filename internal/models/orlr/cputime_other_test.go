//go:build !unix

package orlr

import "time"

// processCPU is not measured on this platform: the benchmarks' cpu-s/op
// metric reads 0.
func processCPU() time.Duration { return 0 }

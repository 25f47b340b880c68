//go:build unix

package eval

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used so
// far. Around a fit it measures the fit's work whatever else loads the
// machine, which wall-clock time does not: on a shared machine the
// wall-clock ratios of a sweep drift with the neighbours' load.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

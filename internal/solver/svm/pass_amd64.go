//go:build !purego

package svm

import "golang.org/x/sys/cpu"

// haveAVX2 selects the AVX2 selection passes (pass_amd64.s). It is set
// once, from the CPU, and never changed.
var haveAVX2 = cpu.X86.HasAVX2

//go:noescape
func updateSelectAVX2(yg, ki, kj, upSel *float64, n int, di, dj float64, best *[4]float64, idx *[4]int64)

//go:noescape
func jScanAVX2(yg, lowSel, qd, ki *float64, t, n int, kii, gmax, thr, tau float64, vmax *[4]float64) int

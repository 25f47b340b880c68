//go:build !purego

package svm

import "golang.org/x/sys/cpu"

// haveAVX2 selects the AVX2 selection passes (pass_amd64.s). It is set
// once, from the CPU, and never changed.
var haveAVX2 = cpu.X86.HasAVX2

//go:noescape
func updateSelectAVX2(yg, ki, kj, upSel *float64, n int, di, dj float64, best *[4]float64, idx *[4]int64)

//go:noescape
func jPassAVX2(yg, lowSel, qd, ki *float64, n int, kii, gmax, tau, shrink float64, vmax, omin *[4]float64, oidx *[4]int64)

//go:noescape
func addRowAVX2(grad, ys, row *float64, n int, d float64)

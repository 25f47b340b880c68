//go:build !amd64 || purego

package svm

// haveAVX2 is false off amd64 (or with the purego tag): the passes are the
// Go loops.
const haveAVX2 = false

func updateSelectAVX2(yg, ki, kj, upSel *float64, n int, di, dj float64, best *[4]float64, idx *[4]int64) {
	panic("svm: no AVX2 passes on this platform")
}

func jScanAVX2(yg, lowSel, qd, ki *float64, t, n int, kii, gmax, thr, tau float64, vmax *[4]float64) int {
	panic("svm: no AVX2 passes on this platform")
}

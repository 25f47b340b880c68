//go:build !amd64 || purego

package svm

// haveAVX2 is false off amd64 (or with the purego tag): the passes are the
// Go loops.
const haveAVX2 = false

func updateSelectAVX2(yg, ki, kj, upSel *float64, n int, di, dj float64, best *[4]float64, idx *[4]int64) {
	panic("svm: no AVX2 passes on this platform")
}

func jPassAVX2(yg, lowSel, qd, ki *float64, n int, kii, gmax, tau, shrink float64, vmax, omin *[4]float64, oidx *[4]int64) {
	panic("svm: no AVX2 passes on this platform")
}

func addRowAVX2(grad, ys, row *float64, n int, d float64) {
	panic("svm: no AVX2 passes on this platform")
}

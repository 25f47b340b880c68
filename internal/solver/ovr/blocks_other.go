//go:build !amd64 || purego

package ovr

// haveAVX2 is false off amd64 (or with the purego tag): BaseRow runs
// base4.
const haveAVX2 = false

func sqDistBlocksAVX2(a *float64, dim int, blk *float64, nb int, out *float64) {
	panic("ovr: no AVX2 loops on this platform")
}

func dotBlocksAVX2(a *float64, dim int, blk *float64, nb int, out *float64) {
	panic("ovr: no AVX2 loops on this platform")
}

const haveExpAVX2 = false

func expScaledAVX2(dst, src *float64, n int, s float64) int {
	panic("ovr: no AVX2 loops on this platform")
}

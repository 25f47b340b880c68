//go:build !purego

package ovr

import "golang.org/x/sys/cpu"

// haveAVX2 selects the AVX2 loops of BaseRow (blocks_amd64.s). It is set
// once, from the CPU, and never changed.
var haveAVX2 = cpu.X86.HasAVX2

// sqDistBlocksAVX2 sets out[4b+u] = Σ_k (a[k] − blk[(b·dim+k)·4+u])² for
// b < nb, summed in k order.
//
//go:noescape
func sqDistBlocksAVX2(a *float64, dim int, blk *float64, nb int, out *float64)

// dotBlocksAVX2 sets out[4b+u] = Σ_k a[k]·blk[(b·dim+k)·4+u] for b < nb,
// summed in k order.
//
//go:noescape
func dotBlocksAVX2(a *float64, dim int, blk *float64, nb int, out *float64)

// haveExpAVX2: expScaledAVX2 repeats math.Exp's FMA path, the one the math
// package takes when the CPU has AVX and FMA (math.useFMA).
var haveExpAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expScaledAVX2 sets dst[t] = math.Exp(s·src[t]) for t < n, four at a time,
// up to the first block with an argument outside [−708, 708], whose start
// it returns (n if none).
//
//go:noescape
func expScaledAVX2(dst, src *float64, n int, s float64) int

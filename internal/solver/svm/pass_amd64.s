//go:build !purego

#include "textflag.h"

// Lane indices 0..3 and the step 4, as int64.
DATA lanes<>+0(SB)/8, $0
DATA lanes<>+8(SB)/8, $1
DATA lanes<>+16(SB)/8, $2
DATA lanes<>+24(SB)/8, $3
GLOBL lanes<>(SB), RODATA|NOPTR, $32
DATA four<>+0(SB)/8, $4
GLOBL four<>(SB), RODATA|NOPTR, $8
DATA four4<>+0(SB)/8, $4
DATA four4<>+8(SB)/8, $4
DATA four4<>+16(SB)/8, $4
DATA four4<>+24(SB)/8, $4
GLOBL four4<>(SB), RODATA|NOPTR, $32
DATA signbit<>+0(SB)/8, $0x8000000000000000
GLOBL signbit<>(SB), RODATA|NOPTR, $8

// func updateSelectAVX2(yg, ki, kj, upSel *float64, n int, di, dj float64, best *[4]float64, idx *[4]int64)
//
// For t < n (a multiple of 4): yg[t] = yg[t] + (ki[t]*di + kj[t]*dj), each
// product and sum rounded as the Go loop rounds them (no fused
// multiply-add), and per lane t mod 4 the last t whose upSel[t] − yg[t] is
// >= the lane's running maximum (best, idx in and out).
TEXT ·updateSelectAVX2(SB), NOSPLIT, $0-72
	MOVQ yg+0(FP), DI
	MOVQ ki+8(FP), SI
	MOVQ kj+16(FP), DX
	MOVQ upSel+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSD di+40(FP), Y0
	VBROADCASTSD dj+48(FP), Y1
	MOVQ best+56(FP), R9
	MOVQ idx+64(FP), R10
	VMOVUPD (R9), Y2
	VMOVDQU (R10), Y3
	VMOVDQU lanes<>(SB), Y4
	VPBROADCASTQ four<>(SB), Y5
	XORQ AX, AX

uloop:
	CMPQ AX, CX
	JGE  udone
	VMOVUPD (SI)(AX*8), Y6
	VMULPD  Y0, Y6, Y6          // ki*di
	VMOVUPD (DX)(AX*8), Y7
	VMULPD  Y1, Y7, Y7          // kj*dj
	VADDPD  Y7, Y6, Y6          // ki*di + kj*dj
	VMOVUPD (DI)(AX*8), Y7
	VADDPD  Y6, Y7, Y7          // yg + (…)
	VMOVUPD Y7, (DI)(AX*8)
	VMOVUPD (R8)(AX*8), Y6
	VSUBPD  Y7, Y6, Y6          // upSel − yg
	VCMPPD  $0x1d, Y2, Y6, Y8   // v >= best (GE_OQ: false for NaN)
	VBLENDVPD Y8, Y6, Y2, Y2
	VBLENDVPD Y8, Y4, Y3, Y3
	VPADDQ  Y5, Y4, Y4
	ADDQ    $4, AX
	JMP     uloop

udone:
	VMOVUPD Y2, (R9)
	VMOVDQU Y3, (R10)
	VZEROUPPER
	RET

// func jPassAVX2(yg, lowSel, qd, ki *float64, n int, kii, gmax, tau, shrink float64, vmax, omin *[4]float64, oidx *[4]int64)
//
// The j pass over t < n (a multiple of 4), lane u holding the examples
// t ≡ u mod 4: vmax folds v = yg + lowSel (v > vmax ? v : vmax, the Go
// loop's test); for a violator (gd = gmax + v > 0) that the filter of the
// current thr does not rule out (gp·gp < thr·quad false, gp = max(gd, +0),
// quad = kii + qd − 2·ki, tau where ≤ 0), obj = −(gp·gp)/quad, and the lane
// keeps the last t whose obj <= its minimum (omin, oidx). thr is −min·shrink
// over the lanes' minima, recomputed after a block that evaluated some obj
// (−∞ until then), as the Go loop recomputes it after each choice.
TEXT ·jPassAVX2(SB), NOSPLIT, $0-96
	MOVQ yg+0(FP), DI
	MOVQ lowSel+8(FP), SI
	MOVQ qd+16(FP), DX
	MOVQ ki+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSD kii+40(FP), Y0
	VBROADCASTSD gmax+48(FP), Y1
	VBROADCASTSD tau+56(FP), Y5
	MOVQ vmax+72(FP), R9
	MOVQ omin+80(FP), R10
	MOVQ oidx+88(FP), R11
	VMOVUPD (R9), Y3
	VMOVUPD (R10), Y12
	VMOVDQU (R11), Y13
	VMOVDQU lanes<>(SB), Y14
	VXORPD  Y4, Y4, Y4
	// thr from the lanes' minima as given: −min·shrink.
	VPERM2F128 $1, Y12, Y12, Y15
	VMINPD  Y15, Y12, Y15
	VPERMILPD $5, Y15, Y2
	VMINPD  Y2, Y15, Y2
	VBROADCASTSD signbit<>(SB), Y15
	VXORPD  Y15, Y2, Y2
	VBROADCASTSD shrink+64(FP), Y15
	VMULPD  Y15, Y2, Y2
	XORQ AX, AX

jloop:
	CMPQ AX, CX
	JGE  jdone
	VMOVUPD (DI)(AX*8), Y6
	VADDPD  (SI)(AX*8), Y6, Y6  // v = yg + lowSel
	VMAXPD  Y3, Y6, Y3          // v > vmax ? v : vmax
	VADDPD  Y1, Y6, Y7          // gd = gmax + v
	VCMPPD  $0x1e, Y4, Y7, Y11  // gd > 0 (GT_OQ)
	VMAXPD  Y4, Y7, Y7          // gp: gd > 0 ? gd : +0
	VMULPD  Y7, Y7, Y7          // gp·gp
	VMOVUPD (R8)(AX*8), Y8
	VADDPD  Y8, Y8, Y8          // 2·ki
	VADDPD  (DX)(AX*8), Y0, Y9  // kii + qd
	VSUBPD  Y8, Y9, Y9          // quad
	VCMPPD  $0x12, Y4, Y9, Y10  // quad <= 0 (LE_OQ)
	VBLENDVPD Y10, Y5, Y9, Y9   // tau there
	VMULPD  Y9, Y2, Y8          // thr·quad
	VCMPPD  $0x11, Y8, Y7, Y10  // gp·gp < thr·quad (LT_OQ): ruled out
	VANDNPD Y11, Y10, Y10       // a violator not ruled out
	VMOVMSKPD Y10, BX
	TESTQ   BX, BX
	JZ      jnext
	VBROADCASTSD signbit<>(SB), Y15
	VXORPD  Y15, Y7, Y7         // −(gp·gp)
	VDIVPD  Y9, Y7, Y7          // obj
	VCMPPD  $0x12, Y12, Y7, Y8  // obj <= omin (LE_OQ)
	VANDPD  Y10, Y8, Y8
	VBLENDVPD Y8, Y7, Y12, Y12
	VBLENDVPD Y8, Y14, Y13, Y13
	// thr = −min(omin)·shrink
	VPERM2F128 $1, Y12, Y12, Y8
	VMINPD  Y8, Y12, Y8
	VPERMILPD $5, Y8, Y2
	VMINPD  Y2, Y8, Y2
	VXORPD  Y15, Y2, Y2
	VBROADCASTSD shrink+64(FP), Y15
	VMULPD  Y15, Y2, Y2

jnext:
	VPADDQ  four4<>(SB), Y14, Y14
	ADDQ    $4, AX
	JMP     jloop

jdone:
	VMOVUPD Y3, (R9)
	VMOVUPD Y12, (R10)
	VMOVDQU Y13, (R11)
	VZEROUPPER
	RET

// func addRowAVX2(grad, ys, row *float64, n int, d float64)
//
// grad[t] = grad[t] + (ys[t]·row[t])·d for t < n (a multiple of 4), each
// product and the sum rounded as the Go loop rounds them.
TEXT ·addRowAVX2(SB), NOSPLIT, $0-40
	MOVQ grad+0(FP), DI
	MOVQ ys+8(FP), SI
	MOVQ row+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSD d+32(FP), Y0
	XORQ AX, AX

aloop:
	CMPQ AX, CX
	JGE  adone
	VMOVUPD (SI)(AX*8), Y1
	VMULPD  (DX)(AX*8), Y1, Y1  // ys·row
	VMULPD  Y0, Y1, Y1          // ·d
	VADDPD  (DI)(AX*8), Y1, Y1  // grad + …
	VMOVUPD Y1, (DI)(AX*8)
	ADDQ    $4, AX
	JMP     aloop

adone:
	VZEROUPPER
	RET

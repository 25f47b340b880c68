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

// func jScanAVX2(yg, lowSel, qd, ki *float64, t, n int, kii, gmax, thr, tau float64, vmax *[4]float64) int
//
// From t to n (multiples of 4), four at a time: folds v = yg + lowSel into
// the lanes of vmax (v > vmax ? v : vmax, as the Go loop's test), and
// returns the first block start at which some lane's gp·gp < thr·quad is
// false (gp = max(gmax + v, +0); quad = kii + qd − 2·ki, tau where ≤ 0),
// or n: the blocks it passes over hold no example the j pass would
// consider with this thr.
TEXT ·jScanAVX2(SB), NOSPLIT, $0-96
	MOVQ yg+0(FP), DI
	MOVQ lowSel+8(FP), SI
	MOVQ qd+16(FP), DX
	MOVQ ki+24(FP), R8
	MOVQ t+32(FP), AX
	MOVQ n+40(FP), CX
	VBROADCASTSD kii+48(FP), Y0
	VBROADCASTSD gmax+56(FP), Y1
	VBROADCASTSD thr+64(FP), Y2
	VBROADCASTSD tau+72(FP), Y5
	MOVQ vmax+80(FP), R9
	VMOVUPD (R9), Y3
	VXORPD  Y4, Y4, Y4

jloop:
	CMPQ AX, CX
	JGE  jdone
	VMOVUPD (DI)(AX*8), Y6
	VADDPD  (SI)(AX*8), Y6, Y6  // v = yg + lowSel
	VMAXPD  Y3, Y6, Y3          // v > vmax ? v : vmax
	VADDPD  Y1, Y6, Y7          // gd = gmax + v
	VMAXPD  Y4, Y7, Y7          // gp: gd > 0 ? gd : +0
	VMULPD  Y7, Y7, Y7          // gp·gp
	VMOVUPD (R8)(AX*8), Y8
	VADDPD  Y8, Y8, Y8          // 2·ki
	VADDPD  (DX)(AX*8), Y0, Y9  // kii + qd
	VSUBPD  Y8, Y9, Y9          // quad
	VCMPPD  $0x12, Y4, Y9, Y10  // quad <= 0 (LE_OQ)
	VBLENDVPD Y10, Y5, Y9, Y9   // tau there
	VMULPD  Y9, Y2, Y9          // thr·quad
	VCMPPD  $0x11, Y9, Y7, Y10  // gp·gp < thr·quad (LT_OQ)
	VMOVMSKPD Y10, BX
	CMPQ    BX, $15
	JNE     jdone
	ADDQ    $4, AX
	JMP     jloop

jdone:
	VMOVUPD Y3, (R9)
	MOVQ    AX, ret+88(FP)
	VZEROUPPER
	RET

//go:build !purego

#include "textflag.h"

// Base4's sums with one row of four per vector lane: lane u of block b
// accumulates row 4b+u's term feature by feature in order, a product and a
// sum rounded separately (VMULPD, VADDPD; no fused multiply-add), as the Go
// loop does, so each sum is the Go loop's float.

// func sqDistBlocksAVX2(a *float64, dim int, blk *float64, nb int, out *float64)
TEXT ·sqDistBlocksAVX2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ dim+8(FP), CX
	MOVQ blk+16(FP), DI
	MOVQ nb+24(FP), DX
	MOVQ out+32(FP), R10
	MOVQ CX, R11
	SHLQ $5, R11 // a block's bytes: dim·4 floats

sqfour:
	// Four blocks at a time: four independent sums per lane.
	CMPQ DX, $4
	JLT  sqone
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	LEAQ (DI)(R11*1), R8
	LEAQ (R8)(R11*1), R9
	LEAQ (R9)(R11*1), R12
	XORQ AX, AX
	XORQ BX, BX

sqfourk:
	CMPQ AX, CX
	JGE  sqfourend
	VBROADCASTSD (SI)(AX*8), Y0
	VSUBPD (DI)(BX*1), Y0, Y1
	VMULPD Y1, Y1, Y1
	VADDPD Y1, Y4, Y4
	VSUBPD (R8)(BX*1), Y0, Y2
	VMULPD Y2, Y2, Y2
	VADDPD Y2, Y5, Y5
	VSUBPD (R9)(BX*1), Y0, Y3
	VMULPD Y3, Y3, Y3
	VADDPD Y3, Y6, Y6
	VSUBPD (R12)(BX*1), Y0, Y8
	VMULPD Y8, Y8, Y8
	VADDPD Y8, Y7, Y7
	INCQ AX
	ADDQ $32, BX
	JMP  sqfourk

sqfourend:
	VMOVUPD Y4, (R10)
	VMOVUPD Y5, 32(R10)
	VMOVUPD Y6, 64(R10)
	VMOVUPD Y7, 96(R10)
	ADDQ $128, R10
	LEAQ (R12)(R11*1), DI
	SUBQ $4, DX
	JMP  sqfour

sqone:
	CMPQ DX, $0
	JLE  sqdone
	VXORPD Y4, Y4, Y4
	XORQ AX, AX
	XORQ BX, BX

sqonek:
	CMPQ AX, CX
	JGE  sqoneend
	VBROADCASTSD (SI)(AX*8), Y0
	VSUBPD (DI)(BX*1), Y0, Y1
	VMULPD Y1, Y1, Y1
	VADDPD Y1, Y4, Y4
	INCQ AX
	ADDQ $32, BX
	JMP  sqonek

sqoneend:
	VMOVUPD Y4, (R10)
	ADDQ $32, R10
	ADDQ R11, DI
	DECQ DX
	JMP  sqone

sqdone:
	VZEROUPPER
	RET

// func dotBlocksAVX2(a *float64, dim int, blk *float64, nb int, out *float64)
TEXT ·dotBlocksAVX2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ dim+8(FP), CX
	MOVQ blk+16(FP), DI
	MOVQ nb+24(FP), DX
	MOVQ out+32(FP), R10
	MOVQ CX, R11
	SHLQ $5, R11 // a block's bytes: dim·4 floats

dofour:
	// Four blocks at a time: four independent sums per lane.
	CMPQ DX, $4
	JLT  doone
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	LEAQ (DI)(R11*1), R8
	LEAQ (R8)(R11*1), R9
	LEAQ (R9)(R11*1), R12
	XORQ AX, AX
	XORQ BX, BX

dofourk:
	CMPQ AX, CX
	JGE  dofourend
	VBROADCASTSD (SI)(AX*8), Y0
	VMULPD (DI)(BX*1), Y0, Y1
	VADDPD Y1, Y4, Y4
	VMULPD (R8)(BX*1), Y0, Y2
	VADDPD Y2, Y5, Y5
	VMULPD (R9)(BX*1), Y0, Y3
	VADDPD Y3, Y6, Y6
	VMULPD (R12)(BX*1), Y0, Y8
	VADDPD Y8, Y7, Y7
	INCQ AX
	ADDQ $32, BX
	JMP  dofourk

dofourend:
	VMOVUPD Y4, (R10)
	VMOVUPD Y5, 32(R10)
	VMOVUPD Y6, 64(R10)
	VMOVUPD Y7, 96(R10)
	ADDQ $128, R10
	LEAQ (R12)(R11*1), DI
	SUBQ $4, DX
	JMP  dofour

doone:
	CMPQ DX, $0
	JLE  dodone
	VXORPD Y4, Y4, Y4
	XORQ AX, AX
	XORQ BX, BX

doonek:
	CMPQ AX, CX
	JGE  dooneend
	VBROADCASTSD (SI)(AX*8), Y0
	VMULPD (DI)(BX*1), Y0, Y1
	VADDPD Y1, Y4, Y4
	INCQ AX
	ADDQ $32, BX
	JMP  doonek

dooneend:
	VMOVUPD Y4, (R10)
	ADDQ $32, R10
	ADDQ R11, DI
	DECQ DX
	JMP  doone

dodone:
	VZEROUPPER
	RET

// The constants of math.Exp's amd64 assembly (exp_amd64.s, Go 1.26), each
// four times for a 256-bit operand.
DATA explog2e<>+0(SB)/8, $1.4426950408889634073599246810018920
DATA explog2e<>+8(SB)/8, $1.4426950408889634073599246810018920
DATA explog2e<>+16(SB)/8, $1.4426950408889634073599246810018920
DATA explog2e<>+24(SB)/8, $1.4426950408889634073599246810018920
GLOBL explog2e<>(SB), RODATA|NOPTR, $32
DATA expln2u<>+0(SB)/8, $0.69314718055966295651160180568695068359375
DATA expln2u<>+8(SB)/8, $0.69314718055966295651160180568695068359375
DATA expln2u<>+16(SB)/8, $0.69314718055966295651160180568695068359375
DATA expln2u<>+24(SB)/8, $0.69314718055966295651160180568695068359375
GLOBL expln2u<>(SB), RODATA|NOPTR, $32
DATA expln2l<>+0(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA expln2l<>+8(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA expln2l<>+16(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA expln2l<>+24(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
GLOBL expln2l<>(SB), RODATA|NOPTR, $32
DATA exp16th<>+0(SB)/8, $0.0625
DATA exp16th<>+8(SB)/8, $0.0625
DATA exp16th<>+16(SB)/8, $0.0625
DATA exp16th<>+24(SB)/8, $0.0625
GLOBL exp16th<>(SB), RODATA|NOPTR, $32
DATA expc64<>+0(SB)/8, $2.4801587301587301587e-5
DATA expc64<>+8(SB)/8, $2.4801587301587301587e-5
DATA expc64<>+16(SB)/8, $2.4801587301587301587e-5
DATA expc64<>+24(SB)/8, $2.4801587301587301587e-5
GLOBL expc64<>(SB), RODATA|NOPTR, $32
DATA expc56<>+0(SB)/8, $1.9841269841269841270e-4
DATA expc56<>+8(SB)/8, $1.9841269841269841270e-4
DATA expc56<>+16(SB)/8, $1.9841269841269841270e-4
DATA expc56<>+24(SB)/8, $1.9841269841269841270e-4
GLOBL expc56<>(SB), RODATA|NOPTR, $32
DATA expc48<>+0(SB)/8, $1.3888888888888888889e-3
DATA expc48<>+8(SB)/8, $1.3888888888888888889e-3
DATA expc48<>+16(SB)/8, $1.3888888888888888889e-3
DATA expc48<>+24(SB)/8, $1.3888888888888888889e-3
GLOBL expc48<>(SB), RODATA|NOPTR, $32
DATA expc40<>+0(SB)/8, $8.3333333333333333333e-3
DATA expc40<>+8(SB)/8, $8.3333333333333333333e-3
DATA expc40<>+16(SB)/8, $8.3333333333333333333e-3
DATA expc40<>+24(SB)/8, $8.3333333333333333333e-3
GLOBL expc40<>(SB), RODATA|NOPTR, $32
DATA expc32<>+0(SB)/8, $4.1666666666666666667e-2
DATA expc32<>+8(SB)/8, $4.1666666666666666667e-2
DATA expc32<>+16(SB)/8, $4.1666666666666666667e-2
DATA expc32<>+24(SB)/8, $4.1666666666666666667e-2
GLOBL expc32<>(SB), RODATA|NOPTR, $32
DATA expc24<>+0(SB)/8, $1.6666666666666666667e-1
DATA expc24<>+8(SB)/8, $1.6666666666666666667e-1
DATA expc24<>+16(SB)/8, $1.6666666666666666667e-1
DATA expc24<>+24(SB)/8, $1.6666666666666666667e-1
GLOBL expc24<>(SB), RODATA|NOPTR, $32
DATA exphalf<>+0(SB)/8, $0.5
DATA exphalf<>+8(SB)/8, $0.5
DATA exphalf<>+16(SB)/8, $0.5
DATA exphalf<>+24(SB)/8, $0.5
GLOBL exphalf<>(SB), RODATA|NOPTR, $32
DATA expone<>+0(SB)/8, $1.0
DATA expone<>+8(SB)/8, $1.0
DATA expone<>+16(SB)/8, $1.0
DATA expone<>+24(SB)/8, $1.0
GLOBL expone<>(SB), RODATA|NOPTR, $32
DATA exptwo<>+0(SB)/8, $2.0
DATA exptwo<>+8(SB)/8, $2.0
DATA exptwo<>+16(SB)/8, $2.0
DATA exptwo<>+24(SB)/8, $2.0
GLOBL exptwo<>(SB), RODATA|NOPTR, $32
DATA expbias<>+0(SB)/8, $1023
DATA expbias<>+8(SB)/8, $1023
DATA expbias<>+16(SB)/8, $1023
DATA expbias<>+24(SB)/8, $1023
GLOBL expbias<>(SB), RODATA|NOPTR, $32
DATA explo<>+0(SB)/8, $-708.0
GLOBL explo<>(SB), RODATA|NOPTR, $8
DATA exphi<>+0(SB)/8, $708.0
GLOBL exphi<>(SB), RODATA|NOPTR, $8

// func expScaledAVX2(dst, src *float64, n int, s float64) int
//
// dst[t] = math.Exp(s·src[t]) for t < n (a multiple of 4), four at a time,
// by the steps of math.Exp's FMA path (archExp: the same operations on the
// same constants, lane by lane, so the same floats), while every x = s·src
// of a block lies in [−708, 708], where archExp takes neither its overflow
// nor its subnormal branch; it returns the first block start where some x
// does not (or is NaN), or n.
TEXT ·expScaledAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD s+24(FP), Y7
	VBROADCASTSD explo<>(SB), Y14
	VBROADCASTSD exphi<>(SB), Y15
	XORQ AX, AX

eloop:
	CMPQ AX, CX
	JGE  edone
	VMULPD  (SI)(AX*8), Y7, Y0      // x = s·src
	VCMPPD  $0x1d, Y14, Y0, Y1      // x >= −708 (GE_OQ)
	VCMPPD  $0x12, Y15, Y0, Y2      // x <= 708 (LE_OQ)
	VANDPD  Y2, Y1, Y1
	VMOVMSKPD Y1, BX
	CMPQ    BX, $15
	JNE     edone
	VMULPD  explog2e<>(SB), Y0, Y1  // LOG2E·x
	VCVTPD2DQY Y1, X2               // the exponent, rounded as CVTSD2SL
	VCVTDQ2PD X2, Y1
	VFNMADD231PD expln2u<>(SB), Y1, Y0
	VFNMADD231PD expln2l<>(SB), Y1, Y0
	VMULPD  exp16th<>(SB), Y0, Y0
	VMOVUPD expc64<>(SB), Y1
	VFMADD213PD expc56<>(SB), Y0, Y1
	VFMADD213PD expc48<>(SB), Y0, Y1
	VFMADD213PD expc40<>(SB), Y0, Y1
	VFMADD213PD expc32<>(SB), Y0, Y1
	VFMADD213PD expc24<>(SB), Y0, Y1
	VFMADD213PD exphalf<>(SB), Y0, Y1
	VFMADD213PD expone<>(SB), Y0, Y1
	VMULPD  Y1, Y0, Y0
	VADDPD  exptwo<>(SB), Y0, Y1
	VMULPD  Y1, Y0, Y0
	VADDPD  exptwo<>(SB), Y0, Y1
	VMULPD  Y1, Y0, Y0
	VADDPD  exptwo<>(SB), Y0, Y1
	VMULPD  Y1, Y0, Y0
	VADDPD  exptwo<>(SB), Y0, Y1
	VFMADD213PD expone<>(SB), Y1, Y0
	// fr · 2^exponent
	VPMOVSXDQ X2, Y3
	VPADDQ  expbias<>(SB), Y3, Y3
	VPSLLQ  $52, Y3, Y3
	VMULPD  Y3, Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ    $4, AX
	JMP     eloop

edone:
	MOVQ    AX, ret+32(FP)
	VZEROUPPER
	RET

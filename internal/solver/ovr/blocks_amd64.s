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

package ovr

import "math"

// Blocks holds rows in blocks of four, feature-major within a block:
// v[(b·dim + k)·4 + u] is feature k of row 4b + u (0 past the last row),
// so that one vector load holds feature k of four rows. BaseRow then
// computes four of base4's sums per instruction where the CPU has AVX2
// (blocks_amd64.s), each still the float of the one-at-a-time loop.
type Blocks struct {
	rows [][]float64
	dim  int
	v    []float64
}

// NewBlocks lays out rows (each of length dim) in blocks of four.
func NewBlocks(rows [][]float64, dim int) *Blocks {
	nb := (len(rows) + 3) / 4
	bl := &Blocks{rows: rows, dim: dim, v: make([]float64, nb*dim*4)}
	for i, r := range rows {
		b, u := i/4, i%4
		blk := bl.v[b*dim*4 : (b+1)*dim*4]
		for k, x := range r[:dim] {
			blk[k*4+u] = x
		}
	}
	return bl
}

// NumBlocks is the number of blocks of four (the last one may be partial).
func (bl *Blocks) NumBlocks() int { return (len(bl.rows) + 3) / 4 }

// BaseRow sets out[j − 4·from] to the γ-free part of the kernel between a
// and row j (base4's ‖a − row‖² or, with poly, ⟨a, row⟩) for every row j of
// the count blocks from block from on (count < 0: to the last block); out
// needs 4·count entries, and those past the last row are left with a's
// value against a zero row. Each value is the float of base4 and of the
// one-at-a-time loop: feature by feature in order, a product and a sum
// rounded separately (TestBaseRowMatchesbase4).
func (bl *Blocks) BaseRow(poly bool, a []float64, from, count int, out []float64) {
	nb := bl.NumBlocks() - from
	if count >= 0 {
		nb = min(nb, count)
	}
	if nb <= 0 {
		return
	}
	out = out[:4*nb]
	if bl.dim == 0 {
		clear(out)
		return
	}
	a = a[:bl.dim]
	if haveAVX2 {
		blk := &bl.v[from*bl.dim*4]
		if poly {
			dotBlocksAVX2(&a[0], bl.dim, blk, nb, &out[0])
		} else {
			sqDistBlocksAVX2(&a[0], bl.dim, blk, nb, &out[0])
		}
		return
	}
	zero := make([]float64, bl.dim)
	var four [4][]float64
	var o [4]float64
	for b := range nb {
		for u := range four {
			four[u] = zero
			if r := 4*(from+b) + u; r < len(bl.rows) {
				four[u] = bl.rows[r]
			}
		}
		base4(poly, a, four[:], &o)
		copy(out[4*b:], o[:])
	}
}

// ExpScaled sets dst[t] = math.Exp(s·src[t]) for every t of src (dst may be
// src), the RBF kernel's values from squared distances with s = −γ. Where
// the CPU has AVX2 and FMA it computes four at a time by math.Exp's own
// steps (blocks_amd64.s), the same floats as math.Exp (TestExpScaledMatchesExp),
// and calls math.Exp for a block holding an argument beyond ±708 (its
// overflow and subnormal branches) and for the last few.
func ExpScaled(dst, src []float64, s float64) {
	n := len(src)
	dst = dst[:n]
	t := 0
	if n4 := n &^ 3; haveExpAVX2 && n4 > 0 {
		for t < n4 {
			if t += expScaledAVX2(&dst[t], &src[t], n4-t, s); t >= n4 {
				break
			}
			for u := t; u < t+4; u++ {
				dst[u] = math.Exp(s * src[u])
			}
			t += 4
		}
	}
	for ; t < n; t++ {
		dst[t] = math.Exp(s * src[t])
	}
}

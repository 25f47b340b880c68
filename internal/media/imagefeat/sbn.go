package imagefeat

import (
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/photo"
)

// SBNDim is the dimension of an SBN instance: a blob's mean colour and its
// four neighbours' differences.
const SBNDim = 15

// SBNIdentity is the featurizer identity of SBN bags.
func SBNIdentity() media.Featurizer {
	return media.Featurizer{Name: "photo-sbn", Version: "1", Params: map[string]string{"size": "8", "blob": "2"}}
}

// SBN returns the nine SBN instances of a photo: the "single blob with
// neighbours" representation of Maron & Ratan (ICML 1998) as Zhou & Zhang
// used it for their MIML scene images (2000 bags of 9 instances of 15
// dimensions, testdata/miml_image_zhou).
//
// The photo is reduced to 8x8 pixels by averaging each cell of an 8x8
// grid (cell edges at floor(i·W/8)) and rounding to whole 8-bit RGB
// values. A blob is a 2x2 block of those pixels; the blobs are the nine
// whose top-left pixel (row r, column c) has r, c in {2, 3, 4}, the ones
// with a whole 2x2 blob on each side, taken in MATLAB's column-major
// order: instance k = 3·(c−2) + (r−2). Its 15 values are the blob's mean
// R, G, B, then for the neighbour blobs above (r−2, c), left (r, c−2),
// below (r+2, c) and right (r, c+2) in turn, the neighbour's mean R, G, B
// minus the blob's.
//
// Why this reading: every value in Zhou & Zhang's data is a multiple of
// 0.25 (means of four whole numbers), and in every one of the 2000 bags
// the six pairs of instances two pixels apart agree with it exactly:
// instance 3's "above" is instance 1's mean minus its own and instance
// 1's "below" the negation, and so on (TestSBNMatchesZhouData). The data
// cannot tell this layout from its transpose (rows for columns, "left"
// for "above"); this is the one that MATLAB's column-major order gives.
func SBN(img *photo.Image) [][]float64 {
	var small [8][8][3]float64 // [row][col][channel]
	w, h := img.W, img.H
	for r := range 8 {
		y0, y1 := r*h/8, (r+1)*h/8
		if y1 == y0 {
			y1 = min(y0+1, h)
		}
		for c := range 8 {
			x0, x1 := c*w/8, (c+1)*w/8
			if x1 == x0 {
				x1 = min(x0+1, w)
			}
			var s [3]float64
			for y := y0; y < y1; y++ {
				for x := x0; x < x1; x++ {
					p := 3 * (y*w + x)
					s[0] += float64(img.Pix[p])
					s[1] += float64(img.Pix[p+1])
					s[2] += float64(img.Pix[p+2])
				}
			}
			n := float64((y1 - y0) * (x1 - x0))
			for ch := range 3 {
				small[r][c][ch] = float64(int(s[ch]/n + 0.5))
			}
		}
	}
	return sbnFrom8x8(&small)
}

// sbnFrom8x8 computes the nine instances from the reduced photo.
func sbnFrom8x8(small *[8][8][3]float64) [][]float64 {
	mean := func(r, c int) [3]float64 {
		var m [3]float64
		for ch := range 3 {
			m[ch] = (small[r][c][ch] + small[r][c+1][ch] + small[r+1][c][ch] + small[r+1][c+1][ch]) / 4
		}
		return m
	}
	out := make([][]float64, 0, 9)
	for c := 2; c <= 4; c++ {
		for r := 2; r <= 4; r++ {
			m := mean(r, c)
			v := make([]float64, 0, SBNDim)
			v = append(v, m[:]...)
			for _, nb := range [4][2]int{{r - 2, c}, {r, c - 2}, {r + 2, c}, {r, c + 2}} {
				n := mean(nb[0], nb[1])
				v = append(v, n[0]-m[0], n[1]-m[1], n[2]-m[2])
			}
			out = append(out, v)
		}
	}
	return out
}

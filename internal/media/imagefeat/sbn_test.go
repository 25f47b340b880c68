package imagefeat

import (
	"math"
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/media/photo"
)

// sbnLayout lists, for instance k in column-major order, its (row, col).
func sbnLayout() [9][2]int {
	var out [9][2]int
	for k := range 9 {
		out[k] = [2]int{2 + k%3, 2 + k/3}
	}
	return out
}

// TestSBNMatchesZhouData checks the definition against Zhou & Zhang's
// 2000 scene bags: whole-number pixels (values on a 0.25 grid, means in
// [0, 255]), and every pair of instances two pixels apart related as the
// layout says (the neighbour term is the other instance's mean minus
// this one's, both ways).
func TestSBNMatchesZhouData(t *testing.T) {
	ds, err := dataset.Load("../../../testdata/miml_image_zhou/miml_03_data.arff")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Bags) != 2000 || ds.Dim != SBNDim {
		t.Fatalf("%d bags of dim %d", len(ds.Bags), ds.Dim)
	}
	layout := sbnLayout()
	at := map[[2]int]int{}
	for k, rc := range layout {
		at[rc] = k
	}
	// Neighbour offsets in the order of the features: above, left, below, right.
	offs := [4][2]int{{-2, 0}, {0, -2}, {2, 0}, {0, 2}}
	pairs := 0
	for bi, b := range ds.Bags {
		if b.Len() != 9 {
			t.Fatalf("bag %d has %d instances", bi, b.Len())
		}
		for k, x := range b.Instances {
			for j, v := range x {
				if v*4 != math.Round(v*4) {
					t.Fatalf("bag %d instance %d value %d = %v off the 0.25 grid", bi, k, j, v)
				}
				if j < 3 && (v < 0 || v > 255) {
					t.Fatalf("bag %d instance %d mean %v outside [0, 255]", bi, k, v)
				}
			}
			for n, o := range offs {
				other, ok := at[[2]int{layout[k][0] + o[0], layout[k][1] + o[1]}]
				if !ok {
					continue // the neighbour is not one of the nine
				}
				for ch := range 3 {
					if got, want := x[3+3*n+ch], b.Instances[other][ch]-x[ch]; got != want {
						t.Fatalf("bag %d instance %d neighbour %d channel %d: %v, want instance %d's mean minus its own = %v", bi, k, n, ch, got, other, want)
					}
				}
				pairs++
			}
		}
	}
	if pairs != 2000*12 {
		t.Fatalf("checked %d relations, want 12 per bag", pairs)
	}
}

// TestSBNHandComputed checks SBN on an 8x8 photo (kept whole by the 8x8
// reduction) whose red value is 10·row + col, green 3·col and blue 100.
// The first instance is the blob with top-left (row 2, col 2):
//
//	mean R = (22 + 23 + 32 + 33)/4 = 27.5; G = (6+9+6+9)/4 = 7.5; B = 100
//	above (row 0, col 2): R (2+3+12+13)/4 = 7.5, minus 27.5 = -20; G 0; B 0
//	left (row 2, col 0):  R (20+21+30+31)/4 = 25.5 → -2; G (0+3+0+3)/4 = 1.5 → -6; B 0
//	below (row 4): R +20, G 0, B 0;  right (col 4): R +2, G +6, B 0.
//
// The second (column-major) is the blob at (row 3, col 2): R 37.5.
func TestSBNHandComputed(t *testing.T) {
	img := &photo.Image{W: 8, H: 8, Pix: make([]uint8, 3*64)}
	for y := range 8 {
		for x := range 8 {
			p := 3 * (y*8 + x)
			img.Pix[p], img.Pix[p+1], img.Pix[p+2] = uint8(10*y+x), uint8(3*x), 100
		}
	}
	got := SBN(img)
	want0 := []float64{27.5, 7.5, 100, -20, 0, 0, -2, -6, 0, 20, 0, 0, 2, 6, 0}
	if len(got) != 9 {
		t.Fatalf("%d instances", len(got))
	}
	for j := range want0 {
		if got[0][j] != want0[j] {
			t.Fatalf("instance 0: %v, want %v", got[0], want0)
		}
	}
	if got[1][0] != 37.5 || got[3][0] != 28.5 {
		t.Fatalf("instance 1 R %v (want 37.5, row 3), instance 3 R %v (want 28.5, col 3)", got[1][0], got[3][0])
	}
}

// TestSBNReduction checks the 8x8 reduction on a photo larger than 8x8:
// each cell's mean, rounded.
func TestSBNReduction(t *testing.T) {
	w, h := 17, 10 // cells of 2 or 3 columns, 1 or 2 rows
	img := &photo.Image{W: w, H: h, Pix: make([]uint8, 3*w*h)}
	for p := range w * h {
		img.Pix[3*p] = uint8(p % 251)
	}
	var small [8][8][3]float64
	for r := range 8 {
		for c := range 8 {
			s, n := 0.0, 0.0
			for y := r * h / 8; y < (r+1)*h/8; y++ {
				for x := c * w / 8; x < (c+1)*w/8; x++ {
					s += float64(img.Pix[3*(y*w+x)])
					n++
				}
			}
			small[r][c][0] = math.Floor(s/n + 0.5)
		}
	}
	want := sbnFrom8x8(&small)
	got := SBN(img)
	for k := range want {
		for j := range want[k] {
			if got[k][j] != want[k][j] {
				t.Fatalf("instance %d: %v, want %v", k, got[k], want[k])
			}
		}
	}
}

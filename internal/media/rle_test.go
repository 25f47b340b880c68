package media_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media"
)

// bruteRLE is the definition read literally: walk the pixels column by
// column and count the runs, the first of zeros.
func bruteRLE(mask []bool, w, h int) []int {
	var counts []int
	want, run := false, 0
	for x := 0; x < w; x++ {
		for y := 0; y < h; y++ {
			if mask[y*w+x] != want {
				counts = append(counts, run)
				want, run = !want, 0
			}
			run++
		}
	}
	return append(counts, run)
}

func bruteBBox(mask []bool, w, h int) [4]int {
	x0, y0, x1, y1 := w, h, -1, -1
	for y := range h {
		for x := range w {
			if mask[y*w+x] {
				x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
			}
		}
	}
	if x1 < 0 {
		return [4]int{}
	}
	return [4]int{x0, y0, x1 + 1, y1 + 1}
}

func TestRLEMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		w, h := 1+rng.IntN(13), 1+rng.IntN(11)
		if trial%10 == 0 {
			w = 1 // single column and single row frames
		} else if trial%10 == 1 {
			h = 1
		}
		// Masks of random density, including empty and full ones, and
		// blobby ones (runs) as well as salt and pepper.
		density := rng.Float64()
		if trial%7 == 0 {
			density = float64(trial % 2) // all false or all true
		}
		mask := make([]bool, w*h)
		for i := range mask {
			mask[i] = rng.Float64() < density
		}
		got := media.EncodeMask(mask, w, h)
		if want := bruteRLE(mask, w, h); !slices.Equal(got.Counts, want) {
			t.Fatalf("%dx%d: counts %v, want %v", w, h, got.Counts, want)
		}
		if got.Size != [2]int{h, w} {
			t.Fatalf("size %v, want [h w] = [%d %d]", got.Size, h, w)
		}
		back, err := got.Decode()
		if err != nil || !slices.Equal(back, mask) {
			t.Fatalf("%dx%d: decode %v (err %v), want %v", w, h, back, err, mask)
		}
		area := 0
		for _, v := range mask {
			if v {
				area++
			}
		}
		if got.Area() != area {
			t.Fatalf("area %d, want %d", got.Area(), area)
		}
		if b, want := got.BBox(), bruteBBox(mask, w, h); b != want {
			t.Fatalf("%dx%d %v: bbox %v, want %v", w, h, mask, b, want)
		}
	}
}

func TestEncodeLabelsMatchesEncodeMask(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		w, h, n := 1+rng.IntN(12), 1+rng.IntN(12), 1+rng.IntN(5)
		labels := make([]int32, w*h)
		for i := range labels {
			// -1 and n are outside every region (void).
			labels[i] = int32(rng.IntN(n+2)) - 1
			if i > 0 && rng.IntN(3) > 0 {
				labels[i] = labels[i-1] // runs
			}
		}
		got := media.EncodeLabels(labels, w, h, n)
		for k := range n {
			mask := make([]bool, w*h)
			for i, l := range labels {
				mask[i] = int(l) == k
			}
			want := media.EncodeMask(mask, w, h)
			if !slices.Equal(got[k].Counts, want.Counts) || got[k].Size != want.Size {
				t.Fatalf("%dx%d label %d: %v, want %v (labels %v)", w, h, k, got[k], want, labels)
			}
		}
	}
}

// TestRLEHandWorked holds the encoding to counts worked by hand from COCO's
// definition: a 3x4 frame (3 rows) with a 2x2 square at rows 1-2, columns
// 1-2 reads, column by column, 3+1 zeros, 2 ones, 1 zero, 2 ones, 3 zeros.
func TestRLEHandWorked(t *testing.T) {
	w, h := 4, 3
	mask := make([]bool, w*h)
	for _, p := range [][2]int{{1, 1}, {1, 2}, {2, 1}, {2, 2}} { // (row, col)
		mask[p[0]*w+p[1]] = true
	}
	r := media.EncodeMask(mask, w, h)
	if want := []int{4, 2, 1, 2, 3}; !slices.Equal(r.Counts, want) {
		t.Fatalf("counts %v, want %v", r.Counts, want)
	}
	if r.BBox() != [4]int{1, 1, 3, 3} {
		t.Fatalf("bbox %v", r.BBox())
	}
}

func TestRLEValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    media.RLE
		ok   bool
	}{
		{"exact", media.RLE{Size: [2]int{2, 2}, Counts: []int{0, 4}}, true},
		{"short", media.RLE{Size: [2]int{2, 2}, Counts: []int{1, 2}}, false},
		{"long", media.RLE{Size: [2]int{2, 2}, Counts: []int{1, 4}}, false},
		{"negative", media.RLE{Size: [2]int{2, 2}, Counts: []int{5, -1}}, false},
		{"empty inner run", media.RLE{Size: [2]int{2, 2}, Counts: []int{2, 0, 2}}, false},
		{"negative size", media.RLE{Size: [2]int{-1, 2}, Counts: []int{0}}, false},
	} {
		err := tc.r.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, media.ErrRLE)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

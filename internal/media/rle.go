package media

import (
	"errors"
	"fmt"
)

// RLE is a binary mask in COCO's uncompressed run-length form, as
// pycocotools' mask.encode/frPyObjects read and write it: the pixels taken
// in column-major order (down the first column, then the next), Counts the
// lengths of alternating runs starting with a run of zeros (0 when the
// first pixel is set). Size is [height, width], COCO's order.
type RLE struct {
	Size   [2]int `json:"size"`
	Counts []int  `json:"counts"`
}

// ErrRLE marks malformed run-length counts.
var ErrRLE = errors.New("invalid RLE mask")

// Validate checks that the counts are non-negative and cover the frame
// exactly.
func (r *RLE) Validate() error {
	h, w := r.Size[0], r.Size[1]
	if h < 0 || w < 0 {
		return fmt.Errorf("%w: size %v", ErrRLE, r.Size)
	}
	total := 0
	for i, c := range r.Counts {
		if c < 0 {
			return fmt.Errorf("%w: count %d is %d", ErrRLE, i, c)
		}
		if i > 0 && c == 0 {
			return fmt.Errorf("%w: empty run at %d (only the first run may be empty)", ErrRLE, i)
		}
		total += c
		if total > h*w {
			break
		}
	}
	if total != h*w {
		return fmt.Errorf("%w: counts cover %d pixels, the %dx%d frame has %d", ErrRLE, total, w, h, h*w)
	}
	return nil
}

// EncodeMask returns the RLE of a row-major mask of width w and height h.
func EncodeMask(mask []bool, w, h int) RLE {
	r := RLE{Size: [2]int{h, w}}
	cur, run := false, 0
	for x := range w {
		for y := range h {
			if v := mask[y*w+x]; v != cur {
				r.Counts = append(r.Counts, run)
				cur, run = v, 0
			}
			run++
		}
	}
	r.Counts = append(r.Counts, run)
	return r
}

// EncodeLabels returns the RLE of every region of a row-major label map
// with values in [0, n): out[k] is the mask of label k. One column-major
// pass serves every region; pixels with a label outside [0, n) belong to
// none.
func EncodeLabels(labels []int32, w, h, n int) []RLE {
	out := make([]RLE, n)
	last := make([]int, n) // column-major index just past each region's last set pixel
	inRun := make([]bool, n)
	runStart := make([]int, n)
	for k := range out {
		out[k].Size = [2]int{h, w}
	}
	prev := int32(-1)
	for x := range w {
		for y := range h {
			i := x*h + y
			l := labels[y*w+x]
			if l == prev {
				continue
			}
			if prev >= 0 && int(prev) < n {
				// prev's run ends at i.
				out[prev].Counts = append(out[prev].Counts, i-runStart[prev])
				inRun[prev] = false
				last[prev] = i
			}
			if l >= 0 && int(l) < n {
				out[l].Counts = append(out[l].Counts, i-last[l])
				runStart[l] = i
				inRun[l] = true
			}
			prev = l
		}
	}
	end := w * h
	for k := range out {
		if inRun[k] {
			out[k].Counts = append(out[k].Counts, end-runStart[k])
		} else {
			out[k].Counts = append(out[k].Counts, end-last[k])
		}
	}
	return out
}

// Decode returns the row-major mask.
func (r *RLE) Decode() ([]bool, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	h, w := r.Size[0], r.Size[1]
	mask := make([]bool, h*w)
	i, v := 0, false
	for _, c := range r.Counts {
		if v {
			for j := i; j < i+c; j++ {
				mask[(j%h)*w+j/h] = true
			}
		}
		i += c
		v = !v
	}
	return mask, nil
}

// Area returns the number of set pixels.
func (r *RLE) Area() int {
	a := 0
	for i := 1; i < len(r.Counts); i += 2 {
		a += r.Counts[i]
	}
	return a
}

// BBox returns [x0, y0, x1, y1] of the set pixels (ends exclusive), all
// zero for an empty mask.
func (r *RLE) BBox() [4]int {
	h := r.Size[0]
	if h == 0 || r.Area() == 0 {
		return [4]int{}
	}
	x0, y0, x1, y1 := int(^uint(0)>>1), int(^uint(0)>>1), -1, -1
	i := 0
	for k, c := range r.Counts {
		if k%2 == 1 && c > 0 {
			first, lastPx := i, i+c-1
			fx, fy := first/h, first%h
			lx, ly := lastPx/h, lastPx%h
			x0, x1 = min(x0, fx), max(x1, lx)
			if fx == lx {
				y0, y1 = min(y0, fy), max(y1, ly)
			} else { // a run over a column's end covers its bottom and the next column's top
				y0, y1 = 0, h-1
			}
		}
		i += c
	}
	return [4]int{x0, y0, x1 + 1, y1 + 1}
}

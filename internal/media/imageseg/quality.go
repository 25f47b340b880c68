package imageseg

// The two measures every superpixel paper reports, as Neubert & Protzel
// ("Superpixel benchmark and comparison", 2012) define them, against a
// ground-truth label map in which 0 is void (unlabelled).

// BoundaryRecall returns the fraction of ground-truth boundary pixels that
// have a segmentation boundary pixel within tol pixels (Chebyshev
// distance). A boundary pixel is a non-void pixel with a 4-neighbour of
// another value (void included: the void bands of MSRC lie along object
// edges); a segmentation boundary pixel is one with a 4-neighbour in
// another region. It returns 1 when the truth has no boundary.
func BoundaryRecall(s *Segmentation, gt []uint8, tol int) float64 {
	w, h := s.W, s.H
	segB := make([]bool, w*h)
	for p := range segB {
		x, y := p%w, p/w
		l := s.Labels[p]
		segB[p] = (x > 0 && s.Labels[p-1] != l) || (x < w-1 && s.Labels[p+1] != l) ||
			(y > 0 && s.Labels[p-w] != l) || (y < h-1 && s.Labels[p+w] != l)
	}
	// Dilate by tol in x, then in y: a square of side 2·tol+1.
	near := dilate(dilate(segB, w, h, tol, 1), w, h, tol, w)
	total, hit := 0, 0
	for p, g := range gt {
		if g == 0 {
			continue
		}
		x, y := p%w, p/w
		if (x > 0 && gt[p-1] != g) || (x < w-1 && gt[p+1] != g) || (y > 0 && gt[p-w] != g) || (y < h-1 && gt[p+w] != g) {
			total++
			if near[p] {
				hit++
			}
		}
	}
	if total == 0 {
		return 1
	}
	return float64(hit) / float64(total)
}

// dilate returns b dilated by r steps of stride along lines of the frame.
func dilate(b []bool, w, h, r, stride int) []bool {
	out := make([]bool, len(b))
	for p, v := range b {
		if !v {
			continue
		}
		x, y := p%w, p/w
		for d := -r; d <= r; d++ {
			var q int
			if stride == 1 {
				if x+d < 0 || x+d >= w {
					continue
				}
				q = p + d
			} else {
				if y+d < 0 || y+d >= h {
					continue
				}
				q = p + d*w
			}
			out[q] = true
		}
	}
	return out
}

// UndersegmentationError returns Neubert & Protzel's corrected
// undersegmentation error: over the non-void pixels, the sum over
// ground-truth regions g and segments s that overlap of
// min(|s ∩ g|, |s \ g|), divided by the number of non-void pixels. A
// segment that leaks out of g costs the smaller of its two parts, so a
// perfect segmentation scores 0. Segment sizes count non-void pixels only.
func UndersegmentationError(s *Segmentation, gt []uint8) float64 {
	segSize := map[int32]int{}
	inter := map[[2]int32]int{}
	n := 0
	for p, g := range gt {
		if g == 0 {
			continue
		}
		n++
		l := s.Labels[p]
		segSize[l]++
		inter[[2]int32{int32(g), l}]++
	}
	if n == 0 {
		return 0
	}
	sum := 0
	for k, in := range inter {
		sum += min(in, segSize[k[1]]-in)
	}
	return float64(sum) / float64(n)
}

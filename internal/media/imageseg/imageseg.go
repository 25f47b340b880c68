// Package imageseg cuts a photo into the regions that become a bag's
// instances. Every segmenter is deterministic (no randomness, no map
// order) and returns a Segmentation, a label per pixel:
//
//   - Regions: SLIC superpixels (Achanta et al., TPAMI 2012) in CIE
//     L*a*b*, made connected, then merged greedily into object-sized
//     regions (the adjacent pair of closest mean colour first, regions
//     below a minimum area before any other) until no adjacent pair is
//     closer than a colour distance and at most a number of regions is
//     left;
//   - Grid: a fixed rows x cols grid;
//   - FromMasks, FromBoxes: regions the user supplies with the photo
//     (masks or boxes from a detector they already run).
package imageseg

import (
	"errors"
	"fmt"
	"math"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/photo"
)

// Segmentation labels each pixel of a W x H photo (row-major) with a region
// in [0, N), or -1 for a pixel in no region (user boxes that leave parts
// of the photo uncovered).
type Segmentation struct {
	W, H   int
	N      int
	Labels []int32
}

// Areas returns the pixel count of every region.
func (s *Segmentation) Areas() []int {
	a := make([]int, s.N)
	for _, l := range s.Labels {
		if l >= 0 {
			a[l]++
		}
	}
	return a
}

// Masks returns each region's mask as COCO RLE.
func (s *Segmentation) Masks() []media.RLE { return media.EncodeLabels(s.Labels, s.W, s.H, s.N) }

// Pixels returns each region's pixel indices (row-major, ascending).
func (s *Segmentation) Pixels() [][]int32 {
	areas := s.Areas()
	out := make([][]int32, s.N)
	for k := range out {
		out[k] = make([]int32, 0, areas[k])
	}
	for i, l := range s.Labels {
		if l >= 0 {
			out[l] = append(out[l], int32(i))
		}
	}
	return out
}

// Params set the Regions segmenter.
type Params struct {
	// Superpixels is SLIC's target number of superpixels (K).
	Superpixels int
	// Compactness is SLIC's m: the weight of spatial against colour
	// distance (10 is the paper's and scikit-image's value for L*a*b*).
	Compactness float64
	// Iterations of SLIC's assignment and update.
	Iterations int
	// MergeDistance: adjacent regions whose mean colours are closer than
	// this (CIE76 ΔE) are merged.
	MergeDistance float64
	// MinRegions: merging stops when this many regions are left, so that
	// each of a photo's labels can have a region of its own (a model
	// reading a bag label as the union of its instances' labels cannot
	// give four labels to three regions). Specks are joined regardless.
	MinRegions int
	// MaxRegions: merging goes on past MergeDistance until at most this
	// many regions are left.
	MaxRegions int
	// MinArea is the fraction of the photo below which a region is
	// merged into its closest neighbour whatever its colour.
	MinArea float64
}

// DefaultParams are the settings tuned on the development photos
// (msrc_v2_dev): see docs/media.md.
func DefaultParams() Params {
	return Params{Superpixels: 150, Compactness: 10, Iterations: 3, MergeDistance: 14, MinRegions: 6, MaxRegions: 8, MinArea: 0.01}
}

// ErrParams marks settings a segmenter cannot run with.
var ErrParams = errors.New("invalid segmentation parameters")

// Validate checks p.
func (p Params) Validate() error {
	switch {
	case p.Superpixels < 1:
		return fmt.Errorf("%w: superpixels %d < 1", ErrParams, p.Superpixels)
	case !(p.Compactness > 0) || math.IsInf(p.Compactness, 0):
		return fmt.Errorf("%w: compactness %v", ErrParams, p.Compactness)
	case p.Iterations < 1:
		return fmt.Errorf("%w: iterations %d < 1", ErrParams, p.Iterations)
	case p.MergeDistance < 0 || math.IsNaN(p.MergeDistance):
		return fmt.Errorf("%w: merge distance %v", ErrParams, p.MergeDistance)
	case p.MaxRegions < 1:
		return fmt.Errorf("%w: max regions %d < 1", ErrParams, p.MaxRegions)
	case p.MinRegions < 1 || p.MinRegions > p.MaxRegions:
		return fmt.Errorf("%w: min regions %d outside [1, max regions %d]", ErrParams, p.MinRegions, p.MaxRegions)
	case !(p.MinArea >= 0 && p.MinArea < 1):
		return fmt.Errorf("%w: min area %v outside [0, 1)", ErrParams, p.MinArea)
	}
	return nil
}

// Regions segments lab: SLIC superpixels, made connected, merged into
// object-sized regions.
func Regions(lab *photo.Lab, p Params) (*Segmentation, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s := SLIC(lab, p.Superpixels, p.Compactness, p.Iterations)
	return Merge(lab, s, p.MergeDistance, p.MinRegions, p.MaxRegions, int(p.MinArea*float64(lab.W*lab.H))), nil
}

// SLIC returns the superpixels of lab (Achanta et al. 2012, without the
// gradient perturbation of the seeds): k seeds on a regular grid of step
// S = sqrt(W·H/k), each pixel assigned to the seed minimising
// d_lab² + (d_xy/S)²·m² within 2S x 2S of the seed, seeds moved to their
// pixels' means, iterations times. Labels are the seeds' indices, not
// yet connected.
func SLIC(lab *photo.Lab, k int, m float64, iterations int) *Segmentation {
	w, h := lab.W, lab.H
	n := w * h
	step := math.Sqrt(float64(n) / float64(k))
	nx := max(1, int(math.Round(float64(w)/step)))
	ny := max(1, int(math.Round(float64(h)/step)))
	sx, sy := float64(w)/float64(nx), float64(h)/float64(ny)
	type center struct{ l, a, b, x, y float32 }
	cs := make([]center, 0, nx*ny)
	for j := range ny {
		for i := range nx {
			x, y := int((float64(i)+0.5)*sx), int((float64(j)+0.5)*sy)
			p := y*w + x
			cs = append(cs, center{lab.L[p], lab.A[p], lab.B[p], float32(x), float32(y)})
		}
	}
	S := max(sx, sy)
	invS2m2 := float32(m * m / (S * S))
	win := int(math.Ceil(S))
	labels := make([]int32, n)
	dist := make([]float32, n)
	type sum struct{ l, a, b, x, y, n float64 }
	sums := make([]sum, len(cs))
	// dx2[i] is the squared column offset of the window's column i from
	// the centre, the same float32 value for every row of the window.
	dx2 := make([]float32, 2*win+1)
	for it := 0; it < iterations; it++ {
		for i := range dist {
			dist[i] = math.MaxFloat32
		}
		for c, ce := range cs {
			cx, cy := int(ce.x+0.5), int(ce.y+0.5)
			x0, x1 := max(0, cx-win), min(w, cx+win+1)
			y0, y1 := max(0, cy-win), min(h, cy+win+1)
			dxx := dx2[:x1-x0]
			for i := range dxx {
				dx := float32(x0+i) - ce.x
				dxx[i] = dx * dx
			}
			for y := y0; y < y1; y++ {
				dy := float32(y) - ce.y
				dy2 := dy * dy
				row := y * w
				L, A, B := lab.L[row+x0:row+x1], lab.A[row+x0:row+x1], lab.B[row+x0:row+x1]
				D := dist[row+x0 : row+x1]
				lb := labels[row+x0 : row+x1]
				A, B, D, lb, dr := A[:len(L)], B[:len(L)], D[:len(L)], lb[:len(L)], dxx[:len(L)]
				for i := range L {
					dl, da, db := L[i]-ce.l, A[i]-ce.a, B[i]-ce.b
					d := dl*dl + da*da + db*db + (dr[i]+dy2)*invS2m2
					if d < D[i] {
						D[i] = d
						lb[i] = int32(c)
					}
				}
			}
		}
		clear(sums)
		for y := range h {
			for x := range w {
				p := y*w + x
				s := &sums[labels[p]]
				s.l += float64(lab.L[p])
				s.a += float64(lab.A[p])
				s.b += float64(lab.B[p])
				s.x += float64(x)
				s.y += float64(y)
				s.n++
			}
		}
		for c := range cs {
			if s := sums[c]; s.n > 0 {
				cs[c] = center{float32(s.l / s.n), float32(s.a / s.n), float32(s.b / s.n), float32(s.x / s.n), float32(s.y / s.n)}
			}
		}
	}
	return &Segmentation{W: w, H: h, N: len(cs), Labels: labels}
}

// Components relabels s so that every region is 4-connected: each
// connected piece of a region becomes a region of its own, numbered in
// the order of its first pixel (row-major), except that a piece of fewer
// than minSize pixels joins the region of the pixel left of (or else
// above) its first pixel, as in Achanta et al.'s connectivity step: SLIC
// leaves specks that no object is made of. Pixels labelled -1 stay -1.
func Components(s *Segmentation, minSize int) *Segmentation {
	w := s.W
	n := len(s.Labels)
	// Two-pass connected-component labelling: union each pixel with its
	// left and upper neighbours of the same label, then number the roots
	// in order of first pixel.
	parent := make([]int32, n)
	find := func(a int32) int32 {
		for parent[a] != a {
			parent[a] = parent[parent[a]]
			a = parent[a]
		}
		return a
	}
	union := func(a, b int32) {
		ra, rb := find(a), find(b)
		if ra < rb {
			parent[rb] = ra
		} else if rb < ra {
			parent[ra] = rb
		}
	}
	for p, l := range s.Labels {
		parent[p] = int32(p)
		if l < 0 {
			continue
		}
		if p%w > 0 && s.Labels[p-1] == l {
			parent[p] = parent[p-1]
		}
		if p >= w && s.Labels[p-w] == l {
			union(int32(p), int32(p-w))
		}
	}
	// A root is its piece's first pixel (unions keep the smaller index).
	// Sizes only decide specks: with minSize <= 0 none is one.
	var size []int32
	if minSize > 0 {
		size = make([]int32, n)
		for p, l := range s.Labels {
			if l >= 0 {
				size[find(int32(p))]++
			}
		}
	}
	out := make([]int32, n)
	next := int32(0)
	for p, l := range s.Labels {
		if l < 0 {
			out[p] = -1
			continue
		}
		r := find(int32(p))
		if r != int32(p) {
			out[p] = out[r]
			continue
		}
		// p starts a piece: a speck joins the region left of (or else
		// above) p, which is numbered already.
		speck := size != nil && int(size[p]) < minSize
		switch {
		case speck && p%w > 0 && s.Labels[p-1] >= 0:
			out[p] = out[p-1]
		case speck && p >= w && s.Labels[p-w] >= 0:
			out[p] = out[p-w]
		default:
			out[p] = next
			next++
		}
	}
	return &Segmentation{W: s.W, H: s.H, N: int(next), Labels: out}
}

// Merge makes s connected (Components), joins each speck (a piece below a
// quarter of the mean size of s's regions: SLIC leaves them along edges)
// to its neighbour of closest mean colour, and merges the regions: while
// more than minRegions are left and some region is smaller than minArea
// pixels, or more than maxRegions are left, or some adjacent pair's mean
// colours are closer than distance (CIE76 ΔE), the adjacent pair to merge
// is the one with the smallest key: small regions before any other, then
// the smallest ΔE; ties go to the lower region indices. The result is
// renumbered by first pixel.
func Merge(lab *photo.Lab, s *Segmentation, distance float64, minRegions, maxRegions, minArea int) *Segmentation {
	c := Components(s, 0)
	speck := float64(len(s.Labels) / max(1, s.N) / 4)
	w := c.W
	n := c.N
	// Sums and, kept beside them, means (ml, ma, mb): the merge loop reads
	// a mean per pair, far more often than a merge changes one.
	type stat struct{ l, a, b, n, ml, ma, mb float64 }
	st := make([]stat, n)
	for p, l := range c.Labels {
		if l < 0 {
			continue
		}
		st[l].l += float64(lab.L[p])
		st[l].a += float64(lab.A[p])
		st[l].b += float64(lab.B[p])
		st[l].n++
	}
	// Adjacent pairs (a < b) from right and down neighbours; a pair
	// repeated along a boundary is appended once per run (the speck
	// passes take repeats; the merge loop gets each pair once).
	var edges [][2]int32
	last := [2]int32{-1, -1}
	add := func(a, b int32) {
		if a == b || a < 0 || b < 0 {
			return
		}
		e := [2]int32{min(a, b), max(a, b)}
		if e != last {
			edges = append(edges, e)
			last = e
		}
	}
	for y := range c.H {
		row := c.Labels[y*w : (y+1)*w]
		for x, l := range row {
			if x < w-1 {
				add(l, row[x+1])
			}
			if y < c.H-1 {
				add(l, c.Labels[(y+1)*w+x])
			}
		}
	}
	// Each pair once, in order of first appearance: the speck passes'
	// choices do not depend on how often or in what order a pair comes
	// (each speck takes its closest neighbour, ties to the lower index),
	// and first appearances are the order the merge loop breaks ties by.
	edges = firstOccurrences(edges, n)
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(a int32) int32 {
		for parent[a] != a {
			parent[a] = parent[parent[a]]
			a = parent[a]
		}
		return a
	}
	alive := n
	for k := range st {
		st[k].ml, st[k].ma, st[k].mb = st[k].l/st[k].n, st[k].a/st[k].n, st[k].b/st[k].n
	}
	dist2 := func(a, b int32) float64 {
		sa, sb := &st[a], &st[b]
		dl, da, db := sa.ml-sb.ml, sa.ma-sb.ma, sa.mb-sb.mb
		return dl*dl + da*da + db*db
	}
	join := func(a, b int32) { // b into a
		parent[b] = a
		sa, sb := &st[a], &st[b]
		sa.l += sb.l
		sa.a += sb.a
		sa.b += sb.b
		sa.n += sb.n
		sa.ml, sa.ma, sa.mb = sa.l/sa.n, sa.a/sa.n, sa.b/sa.n
		alive--
	}
	// Specks first, each to its closest neighbour, in passes over the
	// pairs (a speck may join a speck: the next pass takes the union on)
	// until no speck is left.
	to := make([]int32, n)
	toD := make([]float64, n)
	for {
		for i := range to {
			to[i], toD[i] = -1, math.Inf(1)
		}
		live := edges[:0]
		for _, e := range edges {
			a, b := find(e[0]), find(e[1])
			if a == b {
				continue
			}
			live = append(live, [2]int32{a, b})
			if st[a].n >= speck && st[b].n >= speck {
				continue
			}
			d := dist2(a, b)
			for _, ab := range [2][2]int32{{a, b}, {b, a}} {
				if st[ab[0]].n < speck && (d < toD[ab[0]] || (d == toD[ab[0]] && ab[1] < to[ab[0]])) {
					to[ab[0]], toD[ab[0]] = ab[1], d
				}
			}
		}
		edges = live
		merged := false
		for a, b := range to {
			if b < 0 {
				continue
			}
			ra, rb := find(int32(a)), find(b)
			if ra == rb {
				continue
			}
			if ra > rb {
				ra, rb = rb, ra
			}
			join(ra, rb)
			merged = true
		}
		if !merged {
			break
		}
	}
	// Each pair once from here on, so each pass of the merge loop below
	// costs the number of adjacent region pairs.
	uniq := edges[:0]
	for _, e := range edges {
		if a, b := find(e[0]), find(e[1]); a != b {
			uniq = append(uniq, [2]int32{min(a, b), max(a, b)})
		}
	}
	edges = firstOccurrences(uniq, n)
	d2 := distance * distance
	for alive > max(1, minRegions) {
		bestSmall, bestD := false, math.Inf(1)
		bi := -1
		live := edges[:0]
		for _, e := range edges {
			a, b := find(e[0]), find(e[1])
			if a == b {
				continue
			}
			if a > b {
				a, b = b, a
			}
			live = append(live, [2]int32{a, b})
			small := st[a].n < float64(minArea) || st[b].n < float64(minArea)
			d := dist2(a, b)
			if (small && !bestSmall) || (small == bestSmall && d < bestD) {
				bestSmall, bestD, bi = small, d, len(live)-1
			}
		}
		edges = live
		if bi < 0 || (!bestSmall && alive <= maxRegions && bestD >= d2) {
			break
		}
		a, b := edges[bi][0], edges[bi][1]
		join(a, b)
	}
	// Renumber by first pixel.
	id := make([]int32, n)
	for i := range id {
		id[i] = -1
	}
	// c is Components' own copy: renumbered in place.
	out := c.Labels
	next := int32(0)
	for p, l := range out {
		if l < 0 {
			continue
		}
		r := find(l)
		if id[r] < 0 {
			id[r] = next
			next++
		}
		out[p] = id[r]
	}
	return &Segmentation{W: c.W, H: c.H, N: int(next), Labels: out}
}

// firstOccurrences keeps the first of each pair of regions in [0, n),
// in order, in place. The pairs seen are an open-addressed hash set (a
// map of [2]int32 cost more than the passes it saves).
func firstOccurrences(edges [][2]int32, n int) [][2]int32 {
	size := 16
	for size < 2*len(edges) {
		size *= 2
	}
	set := make([]uint64, size) // key+1, 0 for an empty slot
	out := edges[:0]
	for _, e := range edges {
		k := uint64(e[0])*uint64(n) + uint64(e[1]) + 1
		h := (k * 0x9E3779B97F4A7C15) >> 32 & uint64(size-1)
		for set[h] != 0 && set[h] != k {
			h = (h + 1) & uint64(size-1)
		}
		if set[h] == 0 {
			set[h] = k
			out = append(out, e)
		}
	}
	return out
}

// Grid cuts a w x h photo into rows x cols cells: pixel (x, y) is in cell
// (r, c) = (floor(y·rows/h), floor(x·cols/w)), region r·cols + c.
func Grid(w, h, rows, cols int) (*Segmentation, error) {
	if rows < 1 || cols < 1 || rows > h || cols > w {
		return nil, fmt.Errorf("%w: a %dx%d grid on a %dx%d photo", ErrParams, rows, cols, w, h)
	}
	labels := make([]int32, w*h)
	for y := range h {
		r := y * rows / h
		for x := range w {
			labels[y*w+x] = int32(r*cols + x*cols/w)
		}
	}
	return &Segmentation{W: w, H: h, N: rows * cols, Labels: labels}, nil
}

// ErrRegions marks user-supplied regions that do not fit the photo.
var ErrRegions = errors.New("invalid user regions")

// FromBoxes returns one region per box [x0, y0, x1, y1] (ends exclusive).
// Where boxes overlap, a pixel belongs to the smallest box covering it (a
// detector's object inside a larger one keeps its pixels); pixels in no
// box are in no region. A box with no pixel of its own is refused.
func FromBoxes(w, h int, boxes [][4]int) (*Segmentation, error) {
	if len(boxes) == 0 {
		return nil, fmt.Errorf("%w: no boxes", ErrRegions)
	}
	labels := make([]int32, w*h)
	best := make([]int, w*h)
	for i := range labels {
		labels[i] = -1
	}
	for k, b := range boxes {
		if b[0] < 0 || b[1] < 0 || b[2] > w || b[3] > h || b[0] >= b[2] || b[1] >= b[3] {
			return nil, fmt.Errorf("%w: box %d %v outside the %dx%d photo or empty", ErrRegions, k, b, w, h)
		}
		area := (b[2] - b[0]) * (b[3] - b[1])
		for y := b[1]; y < b[3]; y++ {
			for x := b[0]; x < b[2]; x++ {
				p := y*w + x
				if labels[p] < 0 || area < best[p] {
					labels[p], best[p] = int32(k), area
				}
			}
		}
	}
	s := &Segmentation{W: w, H: h, N: len(boxes), Labels: labels}
	for k, a := range s.Areas() {
		if a == 0 {
			return nil, fmt.Errorf("%w: box %d %v is covered by smaller boxes", ErrRegions, k, boxes[k])
		}
	}
	return s, nil
}

// FromMasks returns one region per mask, in order; a pixel in several
// masks belongs to the last (masks drawn in order, as a label map is).
// A mask of another frame, or left with no pixel, is refused.
func FromMasks(w, h int, masks []media.RLE) (*Segmentation, error) {
	if len(masks) == 0 {
		return nil, fmt.Errorf("%w: no masks", ErrRegions)
	}
	labels := make([]int32, w*h)
	for i := range labels {
		labels[i] = -1
	}
	for k := range masks {
		if masks[k].Size != [2]int{h, w} {
			return nil, fmt.Errorf("%w: mask %d is %dx%d, the photo %dx%d", ErrRegions, k, masks[k].Size[1], masks[k].Size[0], w, h)
		}
		m, err := masks[k].Decode()
		if err != nil {
			return nil, fmt.Errorf("%w: mask %d: %w", ErrRegions, k, err)
		}
		for p, v := range m {
			if v {
				labels[p] = int32(k)
			}
		}
	}
	s := &Segmentation{W: w, H: h, N: len(masks), Labels: labels}
	for k, a := range s.Areas() {
		if a == 0 {
			return nil, fmt.Errorf("%w: mask %d has no pixel of its own", ErrRegions, k)
		}
	}
	return s, nil
}

// Package imagefeat turns a photo and its regions into a bag: one
// instance per region, with the region's box and mask as its provenance,
// and the featurizer's identity. It also computes SBN (Maron & Ratan's
// blobs, as in Zhou & Zhang's scene data) and the holistic vector MIER
// needs (the whole photo as one region).
//
// A region's features (Dim = 24), dimension by dimension:
//
//	0-2   mean L*, a*, b* (CIE L*a*b*, D65), divided by 100
//	3-5   standard deviation of L*, a*, b*, divided by 100
//	6     mean |∂L*/∂x| (central difference, one-sided at the edges) / 100
//	7     mean |∂L*/∂y|, likewise
//	8     mean |∇²L*| (4-neighbour Laplacian, edges replicated) / 100
//	9-10  centroid x / W, centroid y / H
//	11    area / (W·H)
//	12-13 box width / W, box height / H
//	14    area / box area (how much of its box the region fills)
//	15-23 a 3x3 patch: mean L* / 100 of the region's pixels in each cell
//	      of its box cut 3x3 (the pixel d columns into a box w wide in column
//	      floor(3d/w), rows likewise), row by
//	      row; a cell with none of its pixels takes the region's mean
//
// Colour in a perceptual space (ΔE is about the distance people see),
// texture as first and second derivatives of lightness, shape and
// position in the photo's frame, and a coarse appearance patch: the
// classes of scene photos (grass, sky, cow, face) differ first in these.
package imagefeat

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/imageseg"
	"github.com/mimlstream/mimlstream/internal/media/photo"
)

// Dim is the dimension of a region's features.
const Dim = 24

// Name is the region featurizer's name; Version changes whenever the same
// photo and parameters would give other features or regions.
const (
	Name    = "photo-regions"
	Version = "1"
)

// Segmenters a Featurizer can cut a photo with.
const (
	SegRegions = "regions" // SLIC superpixels merged into object-sized regions
	SegGrid    = "grid"    // a fixed grid
)

// Params set a Featurizer.
type Params struct {
	Segmenter string
	Seg       imageseg.Params // SegRegions
	GridRows  int             // SegGrid
	GridCols  int             // SegGrid
}

// DefaultParams are the service's defaults: regions with imageseg's
// defaults.
func DefaultParams() Params {
	return Params{Segmenter: SegRegions, Seg: imageseg.DefaultParams(), GridRows: 3, GridCols: 3}
}

// ErrParams marks settings a featurizer cannot run with.
var ErrParams = errors.New("invalid featurizer parameters")

// Default returns the featurizer with DefaultParams, which are valid (a
// test holds them to it): it panics otherwise, a programming error.
func Default() *Featurizer {
	f, err := New(DefaultParams())
	if err != nil {
		panic(fmt.Sprintf("imagefeat: default parameters: %v", err))
	}
	return f
}

// Featurizer cuts photos into regions and describes each. It holds no
// mutable state: one value serves concurrent calls.
type Featurizer struct {
	p Params
}

// New checks p and returns its featurizer.
func New(p Params) (*Featurizer, error) {
	switch p.Segmenter {
	case SegRegions:
		if err := p.Seg.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrParams, err)
		}
	case SegGrid:
		if p.GridRows < 1 || p.GridCols < 1 {
			return nil, fmt.Errorf("%w: grid %dx%d", ErrParams, p.GridRows, p.GridCols)
		}
	default:
		return nil, fmt.Errorf("%w: segmenter %q (want %s or %s)", ErrParams, p.Segmenter, SegRegions, SegGrid)
	}
	return &Featurizer{p: p}, nil
}

// Identity returns the featurizer's name, version and the parameters that
// change its output.
func (f *Featurizer) Identity() media.Featurizer {
	ps := map[string]string{"segmenter": f.p.Segmenter}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch f.p.Segmenter {
	case SegRegions:
		s := f.p.Seg
		ps["superpixels"] = strconv.Itoa(s.Superpixels)
		ps["compactness"] = g(s.Compactness)
		ps["iterations"] = strconv.Itoa(s.Iterations)
		ps["merge_distance"] = g(s.MergeDistance)
		ps["min_regions"] = strconv.Itoa(s.MinRegions)
		ps["max_regions"] = strconv.Itoa(s.MaxRegions)
		ps["min_area"] = g(s.MinArea)
	case SegGrid:
		ps["grid"] = fmt.Sprintf("%dx%d", f.p.GridRows, f.p.GridCols)
	}
	return media.Featurizer{Name: Name, Version: Version, Params: ps}
}

// UserIdentity is the identity of bags whose regions the user supplied:
// the features are this package's, the regions are not its to vary.
func UserIdentity() media.Featurizer {
	return media.Featurizer{Name: Name, Version: Version, Params: map[string]string{"segmenter": "user"}}
}

// Result is a featurized photo.
type Result struct {
	Instances [][]float64
	Regions   []media.Region
	// Segmentation is the label map the instances were computed from.
	Segmentation *imageseg.Segmentation
	// Holistic is the whole photo through the same features (MIER's
	// holistic vector).
	Holistic []float64
}

// Featurize segments img with f's segmenter and describes every region.
func (f *Featurizer) Featurize(img *photo.Image) (*Result, error) {
	lab := img.ToLab()
	var seg *imageseg.Segmentation
	var err error
	switch f.p.Segmenter {
	case SegRegions:
		seg, err = imageseg.Regions(lab, f.p.Seg)
	case SegGrid:
		seg, err = imageseg.Grid(img.W, img.H, min(f.p.GridRows, img.H), min(f.p.GridCols, img.W))
	}
	if err != nil {
		return nil, err
	}
	return Describe(lab, seg), nil
}

// Describe computes the features of every region of seg (of which none
// may be empty) and the holistic vector.
//
// It makes one pass over the pixels in row-major order, computing each
// pixel's texture measures there and adding the pixel to its region's sums
// and to the whole photo's: a region's sums run over its pixels in the
// same ascending order as a pass over that region alone would, so the
// features are the same to the last bit (TestDescribeMatchesPerRegion),
// without the per-pixel gradient planes and pixel lists such a pass needs.
func Describe(lab *photo.Lab, seg *imageseg.Segmentation) *Result {
	w, h := lab.W, lab.H
	masks := seg.Masks()
	res := &Result{Segmentation: seg, Instances: make([][]float64, seg.N), Regions: make([]media.Region, seg.N)}
	acc := make([]regionSums, seg.N)
	for k := range acc {
		box := masks[k].BBox()
		acc[k].init(box)
		res.Regions[k] = media.Region{BBox: &box, Mask: &masks[k]}
	}
	var all regionSums
	all.init([4]int{0, 0, w, h})
	L := lab.L
	at := func(x, y int) float32 {
		return L[min(max(y, 0), h-1)*w+min(max(x, 0), w-1)]
	}
	for y := range h {
		yu, yd := max(y-1, 0), min(y+1, h-1)
		for x := range w {
			p := y*w + x
			// Central differences, one-sided where a neighbour is missing.
			xl, xr := max(x-1, 0), min(x+1, w-1)
			var dx, dy float32
			if xr > xl {
				dx = abs32(L[y*w+xr]-L[y*w+xl]) / float32(xr-xl)
			}
			if yd > yu {
				dy = abs32(L[yd*w+x]-L[yu*w+x]) / float32(yd-yu)
			}
			lap := abs32(at(x-1, y) + at(x+1, y) + at(x, y-1) + at(x, y+1) - 4*L[p])
			px := pixel{l: float64(L[p]), a: float64(lab.A[p]), b: float64(lab.B[p]),
				dx: float64(dx), dy: float64(dy), lap: float64(lap), x: x, y: y}
			if k := seg.Labels[p]; k >= 0 {
				acc[k].add(&px)
			}
			all.add(&px)
		}
	}
	for k := range acc {
		res.Instances[k] = acc[k].features(w, h)
	}
	res.Holistic = all.features(w, h)
	return res
}

// pixel is what a region's sums take of one pixel.
type pixel struct {
	l, a, b, dx, dy, lap float64
	x, y                 int
}

// regionSums accumulates one region's features over its pixels.
type regionSums struct {
	box                                               [4]int
	n, sL, sA, sB, qL, qA, qB, sdx, sdy, slap, sx, sy float64
	cell, cellN                                       [9]float64
	// col[x-box[0]] and row[y-box[1]] are the patch cell's column and
	// row (0-2) of a pixel: the two integer divisions a pixel, done once
	// per column and row of the box instead.
	col, row []uint8
}

func (r *regionSums) init(box [4]int) {
	r.box = box
	bw, bh := box[2]-box[0], box[3]-box[1]
	r.col, r.row = make([]uint8, bw), make([]uint8, bh)
	for d := range r.col {
		r.col[d] = uint8(min(d*3/bw, 2))
	}
	for d := range r.row {
		r.row[d] = uint8(min(d*3/bh, 2))
	}
}

func (r *regionSums) add(p *pixel) {
	r.n++
	r.sL += p.l
	r.sA += p.a
	r.sB += p.b
	r.qL += p.l * p.l
	r.qA += p.a * p.a
	r.qB += p.b * p.b
	r.sdx += p.dx
	r.sdy += p.dy
	r.slap += p.lap
	r.sx += float64(p.x)
	r.sy += float64(p.y)
	c := int(r.row[p.y-r.box[1]])*3 + int(r.col[p.x-r.box[0]])
	r.cell[c] += p.l
	r.cellN[c]++
}

func abs32(v float32) float32 { return float32(math.Abs(float64(v))) }

// features returns the region's features (see the package comment for the
// dimensions) from its sums over a w x h photo.
func (r *regionSums) features(w, h int) []float64 {
	n := r.n
	bw, bh := r.box[2]-r.box[0], r.box[3]-r.box[1]
	mL, mA, mB := r.sL/n, r.sA/n, r.sB/n
	sd := func(q, m float64) float64 { return math.Sqrt(max(0, q/n-m*m)) }
	v := make([]float64, 0, Dim)
	v = append(v, mL/100, mA/100, mB/100,
		sd(r.qL, mL)/100, sd(r.qA, mA)/100, sd(r.qB, mB)/100,
		r.sdx/n/100, r.sdy/n/100, r.slap/n/100,
		(r.sx/n+0.5)/float64(w), (r.sy/n+0.5)/float64(h),
		n/float64(w*h),
		float64(bw)/float64(w), float64(bh)/float64(h),
		n/float64(bw*bh))
	for k := range r.cell {
		if r.cellN[k] > 0 {
			v = append(v, r.cell[k]/r.cellN[k]/100)
		} else {
			v = append(v, mL/100)
		}
	}
	return v
}

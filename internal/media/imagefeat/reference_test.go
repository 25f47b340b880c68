package imagefeat_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/imageseg"
	"github.com/mimlstream/mimlstream/internal/media/photo"
)

// refDescribe is Describe as it was before its single pass: per-pixel
// gradient planes, then each region's features over its pixel list, then
// the whole photo's over all pixels.
func refDescribe(lab *photo.Lab, seg *imageseg.Segmentation) *imagefeat.Result {
	g := refGradients(lab)
	masks := seg.Masks()
	pixels := seg.Pixels()
	res := &imagefeat.Result{Segmentation: seg, Instances: make([][]float64, seg.N), Regions: make([]media.Region, seg.N)}
	for k, px := range pixels {
		box := masks[k].BBox()
		res.Instances[k] = refFeatures1(lab, g, px, box)
		res.Regions[k] = media.Region{BBox: &box, Mask: &masks[k]}
	}
	all := make([]int32, lab.W*lab.H)
	for i := range all {
		all[i] = int32(i)
	}
	res.Holistic = refFeatures1(lab, g, all, [4]int{0, 0, lab.W, lab.H})
	return res
}

// gradients are the per-pixel texture measures of L*.
type refGrads struct {
	dx, dy, lap []float32
}

func refGradients(lab *photo.Lab) *refGrads {
	w, h := lab.W, lab.H
	L := lab.L
	g := &refGrads{dx: make([]float32, w*h), dy: make([]float32, w*h), lap: make([]float32, w*h)}
	at := func(x, y int) float32 {
		return L[min(max(y, 0), h-1)*w+min(max(x, 0), w-1)]
	}
	for y := range h {
		for x := range w {
			p := y*w + x
			// Central differences, one-sided where a neighbour is missing.
			xl, xr := max(x-1, 0), min(x+1, w-1)
			yu, yd := max(y-1, 0), min(y+1, h-1)
			if xr > xl {
				g.dx[p] = refAbs32(L[y*w+xr]-L[y*w+xl]) / float32(xr-xl)
			}
			if yd > yu {
				g.dy[p] = refAbs32(L[yd*w+x]-L[yu*w+x]) / float32(yd-yu)
			}
			g.lap[p] = refAbs32(at(x-1, y) + at(x+1, y) + at(x, y-1) + at(x, y+1) - 4*L[p])
		}
	}
	return g
}

func refAbs32(v float32) float32 { return float32(math.Abs(float64(v))) }

// features describes the region of pixel indices px (non-empty) with box
// box; see the package comment for the dimensions.
func refFeatures1(lab *photo.Lab, g *refGrads, px []int32, box [4]int) []float64 {
	w, h := lab.W, lab.H
	n := float64(len(px))
	var sL, sA, sB, qL, qA, qB, sdx, sdy, slap, sx, sy float64
	bw, bh := box[2]-box[0], box[3]-box[1]
	var cell [9]float64
	var cellN [9]float64
	for _, p := range px {
		l, a, b := float64(lab.L[p]), float64(lab.A[p]), float64(lab.B[p])
		sL += l
		sA += a
		sB += b
		qL += l * l
		qA += a * a
		qB += b * b
		sdx += float64(g.dx[p])
		sdy += float64(g.dy[p])
		slap += float64(g.lap[p])
		x, y := int(p)%w, int(p)/w
		sx += float64(x)
		sy += float64(y)
		cx := min((x-box[0])*3/bw, 2)
		cy := min((y-box[1])*3/bh, 2)
		cell[cy*3+cx] += l
		cellN[cy*3+cx]++
	}
	mL, mA, mB := sL/n, sA/n, sB/n
	sd := func(q, m float64) float64 { return math.Sqrt(max(0, q/n-m*m)) }
	v := make([]float64, 0, imagefeat.Dim)
	v = append(v, mL/100, mA/100, mB/100,
		sd(qL, mL)/100, sd(qA, mA)/100, sd(qB, mB)/100,
		sdx/n/100, sdy/n/100, slap/n/100,
		(sx/n+0.5)/float64(w), (sy/n+0.5)/float64(h),
		n/float64(w*h),
		float64(bw)/float64(w), float64(bh)/float64(h),
		n/float64(bw*bh))
	for k := range cell {
		if cellN[k] > 0 {
			v = append(v, cell[k]/cellN[k]/100)
		} else {
			v = append(v, mL/100)
		}
	}
	return v
}

// TestDescribeMatchesPerRegion holds Describe to refDescribe on the sample
// photos (the service's regions, a grid, and boxes that leave pixels in no
// region) and on a 1-pixel-wide and a 1-pixel-high photo: every feature
// and the holistic vector equal to the last bit, the same boxes and masks.
func TestDescribeMatchesPerRegion(t *testing.T) {
	photos := samplePhotos(t)
	thin := func(w, h int) *photo.Image {
		img := &photo.Image{W: w, H: h, Pix: make([]uint8, 3*w*h)}
		for i := range img.Pix {
			img.Pix[i] = uint8(i * 37)
		}
		return img
	}
	photos = append(photos, thin(1, 40), thin(40, 1))
	for i, img := range photos {
		lab := img.ToLab()
		segs := []*imageseg.Segmentation{}
		if s, err := imageseg.Regions(lab, imageseg.DefaultParams()); err == nil && img.W > 1 && img.H > 1 {
			segs = append(segs, s)
		}
		g, err := imageseg.Grid(img.W, img.H, min(3, img.H), min(3, img.W))
		if err != nil {
			t.Fatal(err)
		}
		segs = append(segs, g)
		if img.W > 4 && img.H > 4 {
			b, err := imageseg.FromBoxes(img.W, img.H, [][4]int{{0, 0, img.W / 2, img.H / 2}, {1, 1, 3, 3}, {img.W / 3, img.H / 3, img.W, img.H - 1}})
			if err != nil {
				t.Fatal(err)
			}
			segs = append(segs, b)
		}
		for j, s := range segs {
			got, want := imagefeat.Describe(lab, s), refDescribe(lab, s)
			bits := func(vs [][]float64) [][]uint64 {
				out := make([][]uint64, len(vs))
				for k, v := range vs {
					for _, x := range v {
						out[k] = append(out[k], math.Float64bits(x))
					}
				}
				return out
			}
			if !slices.EqualFunc(bits(got.Instances), bits(want.Instances), slices.Equal) ||
				!slices.Equal(bits([][]float64{got.Holistic})[0], bits([][]float64{want.Holistic})[0]) {
				t.Errorf("photo %d segmentation %d: features differ from the per-region reference", i, j)
			}
			for k := range got.Regions {
				if *got.Regions[k].BBox != *want.Regions[k].BBox || !slices.Equal(got.Regions[k].Mask.Counts, want.Regions[k].Mask.Counts) {
					t.Errorf("photo %d segmentation %d region %d: box or mask differs", i, j, k)
				}
			}
		}
	}
}

// samplePhotos decodes testdata/msrc_v2_sample's photos.
func samplePhotos(t *testing.T) []*photo.Image {
	t.Helper()
	dir := "../../../testdata/msrc_v2_sample/images"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []*photo.Image
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		img, err := photo.Decode(data, photo.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, img)
	}
	if len(out) == 0 {
		t.Fatalf("no photos in %s", dir)
	}
	return out
}

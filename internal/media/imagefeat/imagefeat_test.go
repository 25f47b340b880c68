package imagefeat_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/imageseg"
	"github.com/mimlstream/mimlstream/internal/media/photo"
)

// refFeatures computes one region's features from their definitions in
// the package comment, pixel by pixel over the whole frame with the mask
// as a predicate, in float64.
func refFeatures(lab *photo.Lab, in func(x, y int) bool) []float64 {
	w, h := lab.W, lab.H
	L := func(x, y int) float64 {
		return float64(lab.L[min(max(y, 0), h-1)*w+min(max(x, 0), w-1)])
	}
	var n, sl, sa, sb, sx, sy float64
	x0, y0, x1, y1 := w, h, -1, -1
	for y := range h {
		for x := range w {
			if in(x, y) {
				p := y*w + x
				n++
				sl += float64(lab.L[p])
				sa += float64(lab.A[p])
				sb += float64(lab.B[p])
				sx += float64(x) + 0.5
				sy += float64(y) + 0.5
				x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x+1), max(y1, y+1)
			}
		}
	}
	ml, ma, mb := sl/n, sa/n, sb/n
	var vl, va, vb, dx, dy, lap float64
	var cell, cellN [9]float64
	for y := range h {
		for x := range w {
			if !in(x, y) {
				continue
			}
			p := y*w + x
			vl += (float64(lab.L[p]) - ml) * (float64(lab.L[p]) - ml)
			va += (float64(lab.A[p]) - ma) * (float64(lab.A[p]) - ma)
			vb += (float64(lab.B[p]) - mb) * (float64(lab.B[p]) - mb)
			switch {
			case w == 1:
			case x == 0:
				dx += math.Abs(L(1, y) - L(0, y))
			case x == w-1:
				dx += math.Abs(L(w-1, y) - L(w-2, y))
			default:
				dx += math.Abs(L(x+1, y)-L(x-1, y)) / 2
			}
			switch {
			case h == 1:
			case y == 0:
				dy += math.Abs(L(x, 1) - L(x, 0))
			case y == h-1:
				dy += math.Abs(L(x, h-1) - L(x, h-2))
			default:
				dy += math.Abs(L(x, y+1)-L(x, y-1)) / 2
			}
			lap += math.Abs(L(x-1, y) + L(x+1, y) + L(x, y-1) + L(x, y+1) - 4*L(x, y))
			c := min(3*(y-y0)/(y1-y0), 2)*3 + min(3*(x-x0)/(x1-x0), 2)
			cell[c] += float64(lab.L[p])
			cellN[c]++
		}
	}
	bw, bh := float64(x1-x0), float64(y1-y0)
	v := []float64{ml / 100, ma / 100, mb / 100,
		math.Sqrt(vl/n) / 100, math.Sqrt(va/n) / 100, math.Sqrt(vb/n) / 100,
		dx / n / 100, dy / n / 100, lap / n / 100,
		sx / n / float64(w), sy / n / float64(h), n / float64(w*h),
		bw / float64(w), bh / float64(h), n / (bw * bh)}
	for c := range cell {
		if cellN[c] == 0 {
			v = append(v, ml/100)
		} else {
			v = append(v, cell[c]/cellN[c]/100)
		}
	}
	return v
}

func randomPhoto(rng *rand.Rand, w, h int) *photo.Image {
	img := &photo.Image{W: w, H: h, Pix: make([]uint8, 3*w*h)}
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.IntN(256))
	}
	return img
}

func TestFeaturesMatchDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := range 40 {
		w, h := 1+rng.IntN(15), 1+rng.IntN(12)
		img := randomPhoto(rng, w, h)
		lab := img.ToLab()
		boxes := [][4]int{{0, 0, w, h}}
		if w > 2 && h > 2 {
			bx, by := rng.IntN(w-1), rng.IntN(h-1)
			boxes = append(boxes, [4]int{bx, by, bx + 1 + rng.IntN(w-bx-1), by + 1 + rng.IntN(h-by-1)})
		}
		seg, err := imageseg.FromBoxes(w, h, boxes)
		if err != nil {
			t.Fatal(err)
		}
		res := imagefeat.Describe(lab, seg)
		for k := range seg.N {
			want := refFeatures(lab, func(x, y int) bool { return seg.Labels[y*w+x] == int32(k) })
			got := res.Instances[k]
			if len(got) != imagefeat.Dim || len(want) != imagefeat.Dim {
				t.Fatalf("dims %d, %d, want %d", len(got), len(want), imagefeat.Dim)
			}
			for j := range want {
				if math.Abs(got[j]-want[j]) > 1e-5*max(1, math.Abs(want[j])) {
					t.Fatalf("trial %d %dx%d region %d dim %d: %v, want %v", trial, w, h, k, j, got[j], want[j])
				}
			}
			if err := res.Regions[k].Validate(); err != nil {
				t.Fatal(err)
			}
		}
		if want := refFeatures(lab, func(int, int) bool { return true }); math.Abs(res.Holistic[0]-want[0]) > 1e-6 {
			t.Fatalf("holistic %v, want %v", res.Holistic, want)
		}
	}
}

func TestFeaturizerIdentity(t *testing.T) {
	f := imagefeat.Default() // panics if the defaults are invalid
	p := imagefeat.DefaultParams()
	p.Seg.MaxRegions++
	g, _ := imagefeat.New(p)
	if err := media.Check(f.Identity(), g.Identity()); err == nil {
		t.Fatal("featurizers with different settings have the same identity")
	}
	f2, _ := imagefeat.New(imagefeat.DefaultParams())
	if err := media.Check(f.Identity(), f2.Identity()); err != nil {
		t.Fatal(err)
	}
	if _, err := imagefeat.New(imagefeat.Params{Segmenter: "watershed"}); err == nil {
		t.Fatal("unknown segmenter accepted")
	}
}

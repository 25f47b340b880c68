package imageseg_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/imageseg"
	"github.com/mimlstream/mimlstream/internal/media/photo"
)

// twoTone is a w x h photo, its left third one colour and the rest another,
// with noise.
func twoTone(w, h int, seed uint64) *photo.Image {
	rng := rand.New(rand.NewPCG(seed, 1))
	img := &photo.Image{W: w, H: h, Pix: make([]uint8, 3*w*h)}
	for y := range h {
		for x := range w {
			p := 3 * (y*w + x)
			base := [3]int{40, 160, 40} // grass
			if x >= w/3 {
				base = [3]int{120, 170, 230} // sky
			}
			for c := range 3 {
				img.Pix[p+c] = uint8(min(255, max(0, base[c]+rng.IntN(21)-10)))
			}
		}
	}
	return img
}

func TestRegionsFindsTheTwoHalves(t *testing.T) {
	img := twoTone(90, 60, 7)
	p := imageseg.DefaultParams()
	p.MinRegions = 1
	s, err := imageseg.Regions(img.ToLab(), p)
	if err != nil {
		t.Fatal(err)
	}
	if s.N != 2 {
		t.Fatalf("%d regions, want 2", s.N)
	}
	for y := range 60 {
		for x := range 90 {
			want := int32(0)
			if x >= 30 {
				want = 1
			}
			if got := s.Labels[y*90+x]; got != want {
				t.Fatalf("(%d,%d) in region %d, want %d", x, y, got, want)
			}
		}
	}
	gt := make([]uint8, 90*60)
	for p := range gt {
		gt[p] = 1 + uint8(min(1, (p%90)/30))
	}
	if br, ue := imageseg.BoundaryRecall(s, gt, 0), imageseg.UndersegmentationError(s, gt); br != 1 || ue != 0 {
		t.Fatalf("boundary recall %v, undersegmentation %v on a perfect segmentation", br, ue)
	}
}

func TestRegionsDeterministic(t *testing.T) {
	lab := twoTone(64, 48, 3).ToLab()
	a, _ := imageseg.Regions(lab, imageseg.DefaultParams())
	b, _ := imageseg.Regions(lab, imageseg.DefaultParams())
	if !slices.Equal(a.Labels, b.Labels) {
		t.Fatal("two runs differ")
	}
}

// connected reports whether every region of s is one 4-connected piece,
// by a flood fill from each region's first pixel.
func connected(s *imageseg.Segmentation) bool {
	seen := make([]bool, len(s.Labels))
	done := map[int32]bool{}
	for p, l := range s.Labels {
		if l < 0 || seen[p] {
			continue
		}
		if done[l] {
			return false // a second piece of l
		}
		done[l] = true
		stack := []int{p}
		seen[p] = true
		for len(stack) > 0 {
			q := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			x, y := q%s.W, q/s.W
			for _, d := range [][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}} {
				nx, ny := x+d[0], y+d[1]
				if nx < 0 || ny < 0 || nx >= s.W || ny >= s.H {
					continue
				}
				r := ny*s.W + nx
				if !seen[r] && s.Labels[r] == l {
					seen[r] = true
					stack = append(stack, r)
				}
			}
		}
	}
	return true
}

func TestComponentsAndMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		w, h := 1+rng.IntN(20), 1+rng.IntN(20)
		s := &imageseg.Segmentation{W: w, H: h, N: 4, Labels: make([]int32, w*h)}
		for i := range s.Labels {
			s.Labels[i] = int32(rng.IntN(4))
		}
		c := imageseg.Components(s, 0)
		if !connected(c) {
			t.Fatal("a region of Components is not connected")
		}
		// Components only splits: pixels together in c were together in s.
		for p := range c.Labels {
			for q := range c.Labels {
				if c.Labels[p] == c.Labels[q] && s.Labels[p] != s.Labels[q] {
					t.Fatal("Components joined two regions")
				}
			}
		}
		lab := twoTone(w, h, rng.Uint64()).ToLab()
		m := imageseg.Merge(lab, s, 5, 1, 3, 0)
		if !connected(m) || m.N > max(3, 1) {
			t.Fatalf("merge left %d regions (max 3) or a disconnected one", m.N)
		}
		for _, a := range m.Areas() {
			if a == 0 {
				t.Fatal("empty region")
			}
		}
	}
}

func TestGrid(t *testing.T) {
	s, err := imageseg.Grid(10, 7, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Columns 0-3 | 4-6 | 7-9 (floor(x·3/10)), rows 0-3 | 4-6 (floor(y·2/7)).
	if s.Labels[3] != 0 || s.Labels[4] != 1 || s.Labels[6] != 1 || s.Labels[7] != 2 || s.Labels[3*10] != 0 || s.Labels[4*10] != 3 || s.Labels[6*10+9] != 5 {
		t.Fatalf("labels %v", s.Labels)
	}
	if _, err := imageseg.Grid(2, 2, 3, 1); !errors.Is(err, imageseg.ErrParams) {
		t.Fatal(err)
	}
}

func TestFromBoxesAndMasks(t *testing.T) {
	s, err := imageseg.FromBoxes(6, 4, [][4]int{{0, 0, 6, 4}, {1, 1, 3, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Areas(); a[0] != 20 || a[1] != 4 {
		t.Fatalf("areas %v: the inner box keeps its pixels", a)
	}
	for _, bad := range [][][4]int{{{0, 0, 7, 4}}, {{2, 2, 2, 3}}, {{1, 1, 3, 3}, {0, 0, 6, 4}, {1, 1, 3, 3}}, nil} {
		if _, err := imageseg.FromBoxes(6, 4, bad); !errors.Is(err, imageseg.ErrRegions) {
			t.Errorf("boxes %v: %v", bad, err)
		}
	}
	m := s.Masks()
	back, err := imageseg.FromMasks(6, 4, m)
	if err != nil || !slices.Equal(back.Labels, s.Labels) {
		t.Fatalf("FromMasks(Masks) = %v, %v", back, err)
	}
	if _, err := imageseg.FromMasks(5, 4, m); !errors.Is(err, imageseg.ErrRegions) {
		t.Fatal(err)
	}
	if _, err := imageseg.FromMasks(6, 4, []media.RLE{m[1], m[1]}); !errors.Is(err, imageseg.ErrRegions) {
		t.Fatal("a mask hidden by a later one was accepted", err)
	}
}

// TestQualityHandWorked: a 6x1 strip, truth 1 1 1 2 2 0 (0 void).
func TestQualityHandWorked(t *testing.T) {
	gt := []uint8{1, 1, 1, 2, 2, 0}
	for _, tc := range []struct {
		labels []int32
		br     float64 // truth boundary pixels: 2 and 3 (1|2), 4 (2|void)
		ue     float64
	}{
		// One region: g=1 costs min(3, 2) = 2, g=2 min(2, 3) = 2; 4/5.
		{[]int32{0, 0, 0, 0, 0, 0}, 0, 4.0 / 5},
		// Cut at 2|3: its boundary pixels 2 and 3 hit, 4 not (region 1 runs to the void).
		{[]int32{0, 0, 0, 1, 1, 1}, 2.0 / 3, 0},
		// Cut at 1|2: pixel 2 is a boundary pixel of both; g=1 splits
		// into segments, each inside it (cost 0); segment 1 = {2,3,4}
		// (non-void) costs min(1, 2) for g=1 and min(2, 1) for g=2.
		{[]int32{0, 0, 1, 1, 1, 1}, 1.0 / 3, 2.0 / 5},
	} {
		s := &imageseg.Segmentation{W: 6, H: 1, N: 2, Labels: tc.labels}
		if br := imageseg.BoundaryRecall(s, gt, 0); br != tc.br {
			t.Errorf("%v: boundary recall %v, want %v", tc.labels, br, tc.br)
		}
		if ue := imageseg.UndersegmentationError(s, gt); ue != tc.ue {
			t.Errorf("%v: undersegmentation %v, want %v", tc.labels, ue, tc.ue)
		}
	}
}

// TestMinRegions: merging stops at MinRegions regions, however alike their
// colours.
func TestMinRegions(t *testing.T) {
	lab := twoTone(90, 60, 7).ToLab()
	for _, minRegions := range []int{1, 2, 4, 6} {
		p := imageseg.DefaultParams()
		p.MinRegions, p.MergeDistance = minRegions, 1000
		s, err := imageseg.Regions(lab, p)
		if err != nil {
			t.Fatal(err)
		}
		if s.N != minRegions {
			t.Errorf("min regions %d: %d regions", minRegions, s.N)
		}
	}
	p := imageseg.DefaultParams()
	p.MinRegions = p.MaxRegions + 1
	if _, err := imageseg.Regions(lab, p); err == nil {
		t.Error("min regions above max regions accepted")
	}
}

package picture

import (
	"image/color"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media/photo"
)

// TestRender: a 6x4 grey photo, its left half region 0 (class 2), its
// right half region 1 (class 0); inside a region the pixel is the photo
// blended with the class colour, on a border the class colour itself,
// and the legend is drawn to the right.
func TestRender(t *testing.T) {
	img := &photo.Image{W: 6, H: 4, Pix: make([]uint8, 3*24)}
	for i := range img.Pix {
		img.Pix[i] = 100
	}
	regions := make([]int32, 24)
	for p := range regions {
		if p%6 >= 3 {
			regions[p] = 1
		}
	}
	out, err := Render(Input{Photo: img, Regions: regions, Labels: []int{2, 0}, Classes: []string{"a", "b", "c"}, BagLabels: []int{0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if b := out.Bounds(); b.Dx() != 6+legendWidth || b.Dy() < 4 {
		t.Fatalf("bounds %v", b)
	}
	c2 := Colour(2)
	want := color.RGBA{blend(100, c2.R), blend(100, c2.G), blend(100, c2.B), 255}
	if got := out.RGBAAt(0, 0); got != want {
		t.Errorf("inside region 0: %v, want %v", got, want)
	}
	if got := out.RGBAAt(2, 1); got != c2 {
		t.Errorf("border of region 0: %v, want class colour %v", got, c2)
	}
	if got := out.RGBAAt(3, 1); got != Colour(0) {
		t.Errorf("border of region 1: %v, want %v", got, Colour(0))
	}
	if _, err := Render(Input{Photo: img, Regions: regions[:5], Labels: []int{0, 0}}); err == nil {
		t.Error("a region map of the wrong size was drawn")
	}
	if _, err := Render(Input{Photo: img, Regions: regions, Labels: []int{0}}); err == nil {
		t.Error("a region without a label was drawn")
	}
	if got := classesShown(Input{Regions: regions, Labels: []int{2, 0, 1}}); len(got) != 2 || got[0] != 0 || got[1] != 2 {
		t.Errorf("classes shown %v, want [0 2] (label 1 paints no region)", got)
	}
}

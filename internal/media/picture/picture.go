// Package picture renders an annotated photo: each region tinted with the
// colour of its predicted class and outlined, and beside the photo a
// legend of the classes shown and the bag's labels. It is what a person
// holding the photo reads an annotation by.
package picture

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"slices"

	"golang.org/x/image/font"
	"golang.org/x/image/font/inconsolata"
	"golang.org/x/image/math/fixed"

	"github.com/mimlstream/mimlstream/internal/media/photo"
)

// palette holds distinct colours for classes (Kelly's 22 colours of
// maximum contrast, without white and black, then repeated darker):
// class c is drawn in palette[c % len].
var palette = []color.RGBA{
	{243, 195, 0, 255}, {135, 86, 146, 255}, {243, 132, 0, 255}, {161, 202, 241, 255},
	{190, 0, 50, 255}, {194, 178, 128, 255}, {132, 132, 130, 255}, {0, 136, 86, 255},
	{230, 143, 172, 255}, {0, 103, 165, 255}, {249, 133, 121, 255}, {96, 78, 151, 255},
	{246, 166, 0, 255}, {179, 68, 108, 255}, {220, 211, 0, 255}, {136, 45, 23, 255},
	{141, 182, 0, 255}, {101, 69, 34, 255}, {226, 88, 34, 255}, {43, 61, 38, 255},
}

// Colour returns the colour of class c (grey for -1, no class).
func Colour(c int) color.RGBA {
	if c < 0 {
		return color.RGBA{128, 128, 128, 255}
	}
	col := palette[c%len(palette)]
	if k := c / len(palette); k > 0 {
		col.R, col.G, col.B = col.R/uint8(k+1), col.G/uint8(k+1), col.B/uint8(k+1)
	}
	return col
}

// Input is what a picture shows.
type Input struct {
	Photo *photo.Image
	// Regions labels each pixel (row-major) with the instance covering it,
	// -1 for none.
	Regions []int32
	// Labels[k] is instance k's predicted class (-1: none).
	Labels  []int
	Classes []string
	// BagLabels are the photo's labels (as sent, or as predicted).
	BagLabels []int
	Title     string
}

// Tint is the weight of the class colour over the photo inside a region.
const Tint = 0.45

const (
	legendWidth = 240
	lineHeight  = 16
	swatch      = 12
)

// Render draws in as an RGBA image: the photo with its regions tinted and
// outlined, and a legend to its right.
func Render(in Input) (*image.RGBA, error) {
	img := in.Photo
	w, h := img.W, img.H
	if len(in.Regions) != w*h {
		return nil, fmt.Errorf("picture: %d region labels for a %dx%d photo", len(in.Regions), w, h)
	}
	for _, r := range in.Regions {
		if int(r) >= len(in.Labels) {
			return nil, fmt.Errorf("picture: region %d has no label (%d labels)", r, len(in.Labels))
		}
	}
	shown := classesShown(in)
	height := max(h, lineHeight*(len(shown)+len(in.BagLabels)+5))
	out := image.NewRGBA(image.Rect(0, 0, w+legendWidth, height))
	draw.Draw(out, out.Bounds(), &image.Uniform{color.RGBA{255, 255, 255, 255}}, image.Point{}, draw.Src)
	for y := range h {
		for x := range w {
			p := y*w + x
			r, g, b := img.Pix[3*p], img.Pix[3*p+1], img.Pix[3*p+2]
			k := in.Regions[p]
			if k >= 0 {
				c := Colour(in.Labels[k])
				if edge(in.Regions, w, h, x, y) {
					r, g, b = c.R, c.G, c.B
				} else {
					r, g, b = blend(r, c.R), blend(g, c.G), blend(b, c.B)
				}
			}
			out.SetRGBA(x, y, color.RGBA{r, g, b, 255})
		}
	}
	face := inconsolata.Regular8x16
	text := func(x, y int, s string, col color.Color) {
		d := font.Drawer{Dst: out, Src: image.NewUniform(col), Face: face, Dot: fixed.P(x, y)}
		d.DrawString(s)
	}
	black := color.RGBA{0, 0, 0, 255}
	x0, y := w+8, lineHeight
	if in.Title != "" {
		text(x0, y, clip(in.Title), black)
		y += lineHeight + 4
	}
	text(x0, y, "regions:", black)
	y += lineHeight
	for _, c := range shown {
		draw.Draw(out, image.Rect(x0, y-swatch, x0+swatch, y), &image.Uniform{Colour(c)}, image.Point{}, draw.Src)
		text(x0+swatch+6, y, clip(className(in.Classes, c)), black)
		y += lineHeight
	}
	y += 4
	text(x0, y, "bag labels:", black)
	y += lineHeight
	for _, c := range in.BagLabels {
		text(x0+8, y, clip(className(in.Classes, c)), black)
		y += lineHeight
	}
	return out, nil
}

func clip(s string) string {
	const n = (legendWidth - 30) / 8
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func className(classes []string, c int) string {
	if c < 0 {
		return "no label" // drawn grey (Colour)
	}
	if c >= len(classes) {
		return fmt.Sprintf("class %d", c)
	}
	return classes[c]
}

// classesShown lists the classes some region is painted with, ascending.
func classesShown(in Input) []int {
	var out []int
	for k := range in.Labels {
		if !slices.Contains(out, in.Labels[k]) && slices.Contains(in.Regions, int32(k)) {
			out = append(out, in.Labels[k])
		}
	}
	slices.Sort(out)
	return out
}

func blend(a, b uint8) uint8 { return uint8(float64(a)*(1-Tint) + float64(b)*Tint + 0.5) }

// edge reports whether (x, y) borders another region (4-neighbours) or
// the photo's edge is not one: region outlines only.
func edge(regions []int32, w, h, x, y int) bool {
	k := regions[y*w+x]
	return (x > 0 && regions[y*w+x-1] != k) || (x < w-1 && regions[y*w+x+1] != k) ||
		(y > 0 && regions[(y-1)*w+x] != k) || (y < h-1 && regions[(y+1)*w+x] != k)
}

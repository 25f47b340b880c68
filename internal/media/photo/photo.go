// Package photo decodes photos (PNG, JPEG, BMP, WebP) under bounds on their
// bytes and pixels, and converts them to CIE L*a*b*, the space the
// segmenters and featurizers measure colour in.
//
// The pixel bound is checked on the header alone (image.DecodeConfig),
// before any pixel is decoded: a decompression bomb (a few kilobytes
// declaring gigapixels) is refused for what it declares, not after it has
// been inflated.
package photo

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // registers JPEG with image.Decode
	_ "image/png"  // registers PNG
	"math"

	_ "golang.org/x/image/bmp"  // registers BMP
	_ "golang.org/x/image/webp" // registers WebP
)

// Limits bound what Decode accepts.
type Limits struct {
	// MaxBytes bounds the encoded size; <= 0 means DefaultMaxBytes.
	MaxBytes int
	// MaxPixels bounds width·height as the header declares it; <= 0 means
	// DefaultMaxPixels.
	MaxPixels int
}

const (
	// DefaultMaxBytes is the bound on an encoded photo: the bag limit's
	// order of magnitude, far above a camera JPEG.
	DefaultMaxBytes = 16 << 20
	// DefaultMaxPixels is 24 megapixels: 72 MB of RGB once decoded.
	DefaultMaxPixels = 24 << 20
)

// Errors of Decode, each a dead-letter reason; callers match them with
// errors.Is (Reason maps them to the reason's name).
var (
	ErrOversize    = errors.New("image exceeds the byte limit")
	ErrBomb        = errors.New("image declares more pixels than the limit")
	ErrUnsupported = errors.New("unsupported image format")
	ErrCorrupt     = errors.New("corrupt image")
)

// Reason names the dead-letter reason of a Decode error: "oversize",
// "bomb", "unsupported" or "corrupt"; "" for any other error.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrOversize):
		return "oversize"
	case errors.Is(err, ErrBomb):
		return "bomb"
	case errors.Is(err, ErrUnsupported):
		return "unsupported"
	case errors.Is(err, ErrCorrupt):
		return "corrupt"
	}
	return ""
}

// ContentTypes maps the formats Decode reads to their media types.
var contentTypes = map[string]string{"png": "image/png", "jpeg": "image/jpeg", "bmp": "image/bmp", "webp": "image/webp"}

// ContentType returns the media type of a format name image.Decode reports.
func ContentType(format string) string { return contentTypes[format] }

// Image is a decoded photo: 8-bit sRGB, row-major, three bytes a pixel.
type Image struct {
	W, H   int
	Pix    []uint8
	Format string // "png", "jpeg", "bmp", "webp"
}

// Decode decodes data within lim.
func Decode(data []byte, lim Limits) (*Image, error) {
	maxBytes, maxPixels := lim.MaxBytes, lim.MaxPixels
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxPixels <= 0 {
		maxPixels = DefaultMaxPixels
	}
	if len(data) > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrOversize, len(data), maxBytes)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if errors.Is(err, image.ErrFormat) {
		return nil, fmt.Errorf("%w: not PNG, JPEG, BMP or WebP", ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	if _, ok := contentTypes[format]; !ok {
		// Another package of the binary registered it with package image;
		// only the four formats here are accepted.
		return nil, fmt.Errorf("%w: %s (want PNG, JPEG, BMP or WebP)", ErrUnsupported, format)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, fmt.Errorf("%w: %dx%d", ErrCorrupt, cfg.Width, cfg.Height)
	}
	// Compare without multiplying: two header fields near 2^31 overflow
	// an int32 product on 32-bit targets.
	if cfg.Width > maxPixels || cfg.Height > maxPixels/cfg.Width {
		return nil, fmt.Errorf("%w: %s header declares %dx%d, limit %d pixels", ErrBomb, format, cfg.Width, cfg.Height, maxPixels)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, format, err)
	}
	b := img.Bounds()
	if b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return nil, fmt.Errorf("%w: %s decodes to %dx%d, header says %dx%d", ErrCorrupt, format, b.Dx(), b.Dy(), cfg.Width, cfg.Height)
	}
	out := FromImage(img)
	out.Format = format
	return out, nil
}

// FromImage converts any image.Image to 8-bit sRGB. Alpha is dropped as if
// composited on black (premultiplied values taken as they are), which is
// what a photo without transparency is unchanged by.
func FromImage(img image.Image) *Image {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	out := &Image{W: w, H: h, Pix: make([]uint8, 3*w*h)}
	switch m := img.(type) {
	case *image.YCbCr:
		// JPEG's own type: convert row by row without an interface call
		// per pixel.
		i := 0
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				yi, ci := m.YOffset(x, y), m.COffset(x, y)
				r, g, bl := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				out.Pix[i], out.Pix[i+1], out.Pix[i+2] = r, g, bl
				i += 3
			}
		}
	case *image.RGBA:
		i := 0
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := 0; x < w; x++ {
				out.Pix[i], out.Pix[i+1], out.Pix[i+2] = row[4*x], row[4*x+1], row[4*x+2]
				i += 3
			}
		}
	default:
		i := 0
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl, _ := img.At(x, y).RGBA()
				out.Pix[i], out.Pix[i+1], out.Pix[i+2] = uint8(r>>8), uint8(g>>8), uint8(bl>>8)
				i += 3
			}
		}
	}
	return out
}

// Lab is a photo in CIE L*a*b* (D65 white), one plane per channel: L in
// [0, 100], a and b roughly in [-110, 110].
type Lab struct {
	W, H    int
	L, A, B []float32
}

// srgbToLinear maps an 8-bit sRGB value to linear light (IEC 61966-2-1).
var srgbToLinear = func() (t [256]float64) {
	for i := range t {
		c := float64(i) / 255
		if c <= 0.04045 {
			t[i] = c / 12.92
		} else {
			t[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return t
}()

// labF is CIE's f(t): the cube root above (6/29)^3, a line below.
func labF(t float64) float64 {
	const d = 6.0 / 29
	if t > d*d*d {
		return cbrt(t)
	}
	return t/(3*d*d) + 4.0/29
}

// The cube root of ToLab. math.Cbrt was the largest single cost of the
// media path (four float divisions a call, three calls a pixel); labF
// takes roots only of t in ((6/29)^3, 1.09] (x, y, z relative to the
// white point, at most 1.089 for sRGB), so a table over that range and a
// short series do the same without dividing. For t in [2^-7, 2), t lies
// in one of 256 equal cells of its binade, with t0 the cell's midpoint:
// cbrt(t) = cbrt(t0)·(1+δ)^(1/3), δ = (t−t0)/t0, |δ| <= 2^-9, and the
// binomial series to δ^6 leaves a truncation error below 2^-59. The
// result stays within 1 ulp of math.Cbrt (TestCbrtAgainstMath sweeps the
// range; TestLabFastPathEveryColour compares every 8-bit colour).
const (
	cbrtMinExp   = -7 // 2^-7 < (6/29)^3
	cbrtBinades  = 8  // up to 2^1 > 1.09
	cbrtCellBits = 8
)

// cbrtCell holds a cell's midpoint t0 as cbrt(t0) and 1/t0.
type cbrtCell struct{ root, inv float64 }

var cbrtCells = func() (t [cbrtBinades << cbrtCellBits]cbrtCell) {
	for i := range t {
		e, k := i>>cbrtCellBits, i&(1<<cbrtCellBits-1)
		t0 := math.Ldexp(1+(float64(k)+0.5)/(1<<cbrtCellBits), e+cbrtMinExp)
		t[i] = cbrtCell{root: math.Cbrt(t0), inv: 1 / t0}
	}
	return t
}()

// cbrt is the cube root of t; outside [2^-7, 2) it is math.Cbrt's.
func cbrt(t float64) float64 {
	bits := math.Float64bits(t)
	e := int(bits>>52) - 1023 - cbrtMinExp // t is positive: no sign bit
	if uint(e) >= cbrtBinades {
		return math.Cbrt(t)
	}
	c := &cbrtCells[e<<cbrtCellBits|int(bits>>(52-cbrtCellBits)&(1<<cbrtCellBits-1))]
	// t0 is t with the mantissa below the cell's bits set to one half of
	// the cell: t−t0 is exact (same binade, Sterbenz).
	t0 := math.Float64frombits(bits&^(1<<(52-cbrtCellBits)-1) | 1<<(51-cbrtCellBits))
	d := (t - t0) * c.inv
	// (1+δ)^(1/3) − 1, Horner: the binomial coefficients of 1/3.
	q := d * (1.0/3 + d*(-1.0/9+d*(5.0/81+d*(-10.0/243+d*(22.0/729+d*(-154.0/6561))))))
	return c.root + c.root*q
}

// ToLab converts img to CIE L*a*b* (sRGB primaries, D65 white).
func (img *Image) ToLab() *Lab {
	n := img.W * img.H
	out := &Lab{W: img.W, H: img.H, L: make([]float32, n), A: make([]float32, n), B: make([]float32, n)}
	// D65 reference white.
	const xn, zn = 0.95047, 1.08883
	for i := range n {
		r := srgbToLinear[img.Pix[3*i]]
		g := srgbToLinear[img.Pix[3*i+1]]
		b := srgbToLinear[img.Pix[3*i+2]]
		x := (0.4124564*r + 0.3575761*g + 0.1804375*b) / xn
		y := 0.2126729*r + 0.7151522*g + 0.0721750*b
		z := (0.0193339*r + 0.1191920*g + 0.9503041*b) / zn
		fx, fy, fz := labF(x), labF(y), labF(z)
		out.L[i] = float32(116*fy - 16)
		out.A[i] = float32(500 * (fx - fy))
		out.B[i] = float32(200 * (fy - fz))
	}
	return out
}

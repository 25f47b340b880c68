package photo_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"testing"

	"golang.org/x/image/bmp"

	"github.com/mimlstream/mimlstream/internal/media/photo"
)

func testImage(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(40 * x), uint8(30 * y), uint8(x * y), 255})
		}
	}
	return img
}

func encode(t *testing.T, f func(*bytes.Buffer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pngBomb returns a valid small PNG whose IHDR is rewritten to declare
// w x h pixels (CRC recomputed), as a decompression bomb's header does.
func pngBomb(t *testing.T, w, h uint32) []byte {
	data := encode(t, func(b *bytes.Buffer) error { return png.Encode(b, testImage(2, 2)) })
	// Signature (8), IHDR length (4), "IHDR" (4), width, height.
	binary.BigEndian.PutUint32(data[16:], w)
	binary.BigEndian.PutUint32(data[20:], h)
	binary.BigEndian.PutUint32(data[29:], crc32.ChecksumIEEE(data[12:29]))
	return data
}

func TestDecodeFormats(t *testing.T) {
	src := testImage(5, 4)
	webp, err := os.ReadFile("../../../testdata/media/blue-purple-pink.lossy.webp")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format string
		data   []byte
		exact  bool
	}{
		{"png", encode(t, func(b *bytes.Buffer) error { return png.Encode(b, src) }), true},
		{"bmp", encode(t, func(b *bytes.Buffer) error { return bmp.Encode(b, src) }), true},
		{"jpeg", encode(t, func(b *bytes.Buffer) error { return jpeg.Encode(b, src, &jpeg.Options{Quality: 100}) }), false},
		{"webp", webp, false},
	} {
		img, err := photo.Decode(tc.data, photo.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if img.Format != tc.format || photo.ContentType(img.Format) == "" {
			t.Errorf("format %q, want %q", img.Format, tc.format)
		}
		if !tc.exact {
			if img.W <= 0 || len(img.Pix) != 3*img.W*img.H {
				t.Errorf("%s: %dx%d with %d bytes", tc.format, img.W, img.H, len(img.Pix))
			}
			continue
		}
		if img.W != 5 || img.H != 4 {
			t.Fatalf("%s: %dx%d", tc.format, img.W, img.H)
		}
		for y := range 4 {
			for x := range 5 {
				c := src.RGBAAt(x, y)
				i := 3 * (y*5 + x)
				if got := [3]uint8{img.Pix[i], img.Pix[i+1], img.Pix[i+2]}; got != [3]uint8{c.R, c.G, c.B} {
					t.Fatalf("%s (%d,%d): %v, want %v", tc.format, x, y, got, c)
				}
			}
		}
	}
}

// TestDecodeJPEGFastPath holds the YCbCr conversion to image/color's
// generic one.
func TestDecodeJPEGFastPath(t *testing.T) {
	data := encode(t, func(b *bytes.Buffer) error { return jpeg.Encode(b, testImage(17, 9), &jpeg.Options{Quality: 80}) })
	img, err := photo.Decode(data, photo.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := jpeg.Decode(bytes.NewReader(data))
	for y := range 9 {
		for x := range 17 {
			r, g, b, _ := ref.At(x, y).RGBA()
			i := 3 * (y*17 + x)
			if img.Pix[i] != uint8(r>>8) || img.Pix[i+1] != uint8(g>>8) || img.Pix[i+2] != uint8(b>>8) {
				t.Fatalf("(%d,%d)", x, y)
			}
		}
	}
}

func TestDecodeRefusals(t *testing.T) {
	good := encode(t, func(b *bytes.Buffer) error { return png.Encode(b, testImage(8, 8)) })
	jpg := encode(t, func(b *bytes.Buffer) error { return jpeg.Encode(b, testImage(64, 64), nil) })
	gifData := encode(t, func(b *bytes.Buffer) error { return gif.Encode(b, testImage(4, 4), nil) })
	for _, tc := range []struct {
		name   string
		data   []byte
		lim    photo.Limits
		want   error
		reason string
	}{
		{"oversize", good, photo.Limits{MaxBytes: len(good) - 1}, photo.ErrOversize, "oversize"},
		{"at the byte limit", good, photo.Limits{MaxBytes: len(good)}, nil, ""},
		{"bomb", pngBomb(t, 100000, 100000), photo.Limits{}, photo.ErrBomb, "bomb"},
		{"bomb over a small limit", good, photo.Limits{MaxPixels: 63}, photo.ErrBomb, "bomb"},
		{"at the pixel limit", good, photo.Limits{MaxPixels: 64}, nil, ""},
		{"truncated jpeg", jpg[:len(jpg)/2], photo.Limits{}, photo.ErrCorrupt, "corrupt"},
		{"garbage", []byte("this is not an image at all"), photo.Limits{}, photo.ErrUnsupported, "unsupported"},
		{"gif", gifData, photo.Limits{}, photo.ErrUnsupported, "unsupported"},
		{"empty", nil, photo.Limits{}, photo.ErrUnsupported, "unsupported"},
		{"zero width", pngBomb(t, 0, 5), photo.Limits{}, photo.ErrCorrupt, "corrupt"},
	} {
		_, err := photo.Decode(tc.data, tc.lim)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) || photo.Reason(err) != tc.reason {
			t.Errorf("%s: %v (reason %q), want %v", tc.name, err, photo.Reason(err), tc.want)
		}
	}
}

func TestLabReferenceColours(t *testing.T) {
	// Reference values: CIE L*a*b* (D65) of the sRGB primaries and white,
	// as colour-science tables give them to two decimals.
	for _, tc := range []struct {
		rgb     [3]uint8
		l, a, b float64
	}{
		{[3]uint8{255, 255, 255}, 100, 0, 0},
		{[3]uint8{0, 0, 0}, 0, 0, 0},
		{[3]uint8{255, 0, 0}, 53.24, 80.09, 67.20},
		{[3]uint8{0, 255, 0}, 87.73, -86.18, 83.18},
		{[3]uint8{0, 0, 255}, 32.30, 79.19, -107.86},
	} {
		img := &photo.Image{W: 1, H: 1, Pix: tc.rgb[:]}
		lab := img.ToLab()
		if math.Abs(float64(lab.L[0])-tc.l) > 0.02 || math.Abs(float64(lab.A[0])-tc.a) > 0.02 || math.Abs(float64(lab.B[0])-tc.b) > 0.02 {
			t.Errorf("%v: L*a*b* (%.2f, %.2f, %.2f), want (%.2f, %.2f, %.2f)", tc.rgb, lab.L[0], lab.A[0], lab.B[0], tc.l, tc.a, tc.b)
		}
	}
}

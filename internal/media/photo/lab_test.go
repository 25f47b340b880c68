package photo

import (
	"math"
	"testing"
)

// refLabF is labF as it was before the table: math.Cbrt.
func refLabF(t float64) float64 {
	const d = 6.0 / 29
	if t > d*d*d {
		return math.Cbrt(t)
	}
	return t/(3*d*d) + 4.0/29
}

// ulps32 is the distance between two float32 values in units in the last
// place (adjacent values differ by 1).
func ulps32(a, b float32) int64 {
	key := func(f float32) int64 {
		u := int64(math.Float32bits(f))
		if u&(1<<31) != 0 {
			return -(u &^ (1 << 31))
		}
		return u
	}
	d := key(a) - key(b)
	return max(d, -d)
}

// TestCbrtAgainstMath holds the table-and-series cube root to math.Cbrt
// over a dense sweep of the range labF takes roots of, ((6/29)^3, 1.1],
// and across the table's binades and cells: at most 1 ulp apart.
func TestCbrtAgainstMath(t *testing.T) {
	lo := math.Pow(6.0/29, 3)
	const n = 4_000_000
	worst, differ := 0.0, 0
	check := func(x float64) {
		got, want := cbrt(x), math.Cbrt(x)
		if got == want {
			return
		}
		differ++
		u := math.Abs(got-want) / (math.Nextafter(want, math.Inf(1)) - want)
		worst = max(worst, u)
		if u > 1 {
			t.Fatalf("cbrt(%v) = %v, math.Cbrt %v: %.2f ulp apart", x, got, want, u)
		}
	}
	for i := 0; i <= n; i++ {
		check(lo + (1.1-lo)*float64(i)/n)
	}
	// Every cell's ends and midpoint, and both sides of every boundary.
	for i := range cbrtCells {
		e, k := i>>cbrtCellBits, i&(1<<cbrtCellBits-1)
		a := math.Ldexp(1+float64(k)/(1<<cbrtCellBits), e+cbrtMinExp)
		b := math.Ldexp(1+float64(k+1)/(1<<cbrtCellBits), e+cbrtMinExp)
		for _, x := range []float64{a, math.Nextafter(a, 0), (a + b) / 2, math.Nextafter(b, 0)} {
			check(x)
		}
	}
	// Outside the table it is math.Cbrt itself.
	for _, x := range []float64{1e-300, 1e-5, 0.0078125 * 0.999, 2, 3.5, 1e10} {
		if cbrt(x) != math.Cbrt(x) {
			t.Errorf("cbrt(%v) = %v outside the table, math.Cbrt %v", x, cbrt(x), math.Cbrt(x))
		}
	}
	t.Logf("%d of %d arguments differ from math.Cbrt, by at most %.2f ulp", differ, n+1+4*len(cbrtCells), worst)
}

// TestLabFastPathEveryColour converts every 8-bit sRGB colour (2^24) by
// ToLab and by the path it replaced (math.Cbrt): the float32 L*, a*, b*
// may differ only in their last bit, and only for a handful of colours.
func TestLabFastPathEveryColour(t *testing.T) {
	if testing.Short() {
		t.Skip("2^24 colours")
	}
	const side = 256
	img := &Image{W: side * side, H: side, Pix: make([]uint8, 3*side*side*side)}
	for i := range side * side * side {
		img.Pix[3*i], img.Pix[3*i+1], img.Pix[3*i+2] = uint8(i>>16), uint8(i>>8), uint8(i)
	}
	lab := img.ToLab()
	const xn, zn = 0.95047, 1.08883
	differ, worst := 0, int64(0)
	for i := range side * side * side {
		r := srgbToLinear[img.Pix[3*i]]
		g := srgbToLinear[img.Pix[3*i+1]]
		b := srgbToLinear[img.Pix[3*i+2]]
		x := (0.4124564*r + 0.3575761*g + 0.1804375*b) / xn
		y := 0.2126729*r + 0.7151522*g + 0.0721750*b
		z := (0.0193339*r + 0.1191920*g + 0.9503041*b) / zn
		fx, fy, fz := refLabF(x), refLabF(y), refLabF(z)
		want := [3]float32{float32(116*fy - 16), float32(500 * (fx - fy)), float32(200 * (fy - fz))}
		got := [3]float32{lab.L[i], lab.A[i], lab.B[i]}
		if got != want {
			if differ < 20 {
				t.Logf("colour %v: got %v want %v", img.Pix[3*i:3*i+3], got, want)
			}
			differ++
			for c := range got {
				worst = max(worst, ulps32(got[c], want[c]))
			}
		}
	}
	t.Logf("%d of %d colours differ, by at most %d ulp (float32)", differ, side*side*side, worst)
	if worst > 1 || differ > side*side*side/1000 {
		t.Errorf("%d colours differ, by up to %d ulp: want at most 1 ulp on at most 0.1%% of them", differ, worst)
	}
}

// BenchmarkToLab times the conversion of a 320x213 photo's worth of
// colours by ToLab against the path it replaced (math.Cbrt), in the same
// run: compare the two ns/op.
func BenchmarkToLab(b *testing.B) {
	img := &Image{W: 320, H: 213, Pix: make([]uint8, 3*320*213)}
	for i := range img.Pix {
		img.Pix[i] = uint8(i*7919>>3 + i/3)
	}
	b.Run("table", func(b *testing.B) {
		for b.Loop() {
			img.ToLab()
		}
	})
	b.Run("math.Cbrt", func(b *testing.B) {
		for b.Loop() {
			refToLab(img)
		}
	})
}

// refToLab is ToLab with math.Cbrt.
func refToLab(img *Image) *Lab {
	n := img.W * img.H
	out := &Lab{W: img.W, H: img.H, L: make([]float32, n), A: make([]float32, n), B: make([]float32, n)}
	const xn, zn = 0.95047, 1.08883
	for i := range n {
		r := srgbToLinear[img.Pix[3*i]]
		g := srgbToLinear[img.Pix[3*i+1]]
		b := srgbToLinear[img.Pix[3*i+2]]
		x := (0.4124564*r + 0.3575761*g + 0.1804375*b) / xn
		y := 0.2126729*r + 0.7151522*g + 0.0721750*b
		z := (0.0193339*r + 0.1191920*g + 0.9503041*b) / zn
		fx, fy, fz := refLabF(x), refLabF(y), refLabF(z)
		out.L[i] = float32(116*fy - 16)
		out.A[i] = float32(500 * (fx - fy))
		out.B[i] = float32(200 * (fy - fz))
	}
	return out
}

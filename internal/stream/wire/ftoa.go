package wire

import (
	"math"
	"math/bits"
)

// appendShortest appends the shortest decimal that reads back as x, for
// 2⁻¹⁹ <= |x| < 2²², in plain notation: the bytes of strconv.AppendFloat
// (x, 'f', -1, 64), which TestShortestMatchesStrconv and FuzzAppendFloat
// hold it to. It returns false, having appended nothing, for a value it
// does not take (out of range, or a power of two); strconv then decides.
//
// Why: an annotation carries a score per class for the bag and for every
// instance (92 numbers for an MSCV2 bag), each a computed value needing 16
// or 17 digits, and strconv's general formatting of them was the largest
// cost of writing an annotation. Here x = m·2⁻ˢ exactly; V = m·10ᵏ is
// x·10ᵏ·2ˢ in 128 bits with x·10ᵏ of 17 or 18 digits, and the decimals
// that read back as x are those within half an ulp of it, 10ᵏ/2 in the
// same units. The shortest is found by dropping digits while a neighbour
// of x at that precision stays within the interval, and is the closer
// neighbour. No candidate (at most k <= 22 decimals) can lie exactly on
// the interval's edge or exactly between two candidates: both points have
// s+1 >= 32 decimals. So neither the rounding of a tie when reading back
// nor a choice between equally close neighbours arises.
func appendShortest(b []byte, x float64) ([]byte, bool) {
	u := math.Float64bits(x)
	frac := u & (1<<52 - 1)
	if frac == 0 {
		// A power of two (or zero): the interval below it is half the
		// one above.
		return b, false
	}
	e2 := int(u>>52&0x7ff) - 1023 // |x| in [2^e2, 2^(e2+1))
	if e2 < -19 || e2 > 21 {
		// Below 2⁻¹⁹, 10ᵏ·m would not fit in 128 bits.
		return b, false
	}
	m := frac | 1<<52
	s := uint(52 - e2)       // |x| = m / 2^s
	k := 16 - (e2*78913)>>18 // 16 - floor(e2·log10 2): x·10ᵏ has 17 or 18 digits
	p := pow10x128[k]
	hi, lo := bits.Mul64(m, p[1])
	v := u128{hi + m*p[0], lo}
	var n uint64 // floor(x·10ᵏ)
	if s >= 64 {
		n = v.hi >> (s - 64)
	} else {
		n = v.hi<<(64-s) | v.lo>>s
	}
	half := u128{p[0] >> 1, p[1]>>1 | p[0]<<63} // 10ᵏ/2: half an ulp
	best, found := uint64(0), false
	q, step := n, uint64(1)
	for range 18 {
		// The neighbours of x with the last t digits zero: below and
		// above.
		below := q * step
		dBelow := v.sub(shl(below, s))
		dAbove := shl(below+step, s).sub(v)
		inBelow, inAbove := dBelow.less(half), dAbove.less(half)
		if !inBelow && !inAbove {
			break
		}
		found = true
		switch {
		case inBelow && inAbove:
			if dBelow.less(dAbove) {
				best = below
			} else {
				best = below + step
			}
		case inBelow:
			best = below
		default:
			best = below + step
		}
		q /= 10
		step *= 10
	}
	if !found {
		return b, false
	}
	if x < 0 {
		b = append(b, '-')
	}
	// |x| reads back from best·10⁻ᵏ; write it without trailing zeros.
	for best%10 == 0 {
		best /= 10
		k--
	}
	var d [20]byte
	i := len(d)
	for best >= 100 {
		r := best % 100
		best /= 100
		i -= 2
		d[i], d[i+1] = digitPairs[2*r], digitPairs[2*r+1]
	}
	if best >= 10 {
		i -= 2
		d[i], d[i+1] = digitPairs[2*best], digitPairs[2*best+1]
	} else {
		i--
		d[i] = byte('0' + best)
	}
	digits := d[i:]
	switch n := len(digits); {
	case k >= n:
		b = append(b, '0', '.')
		for range k - n {
			b = append(b, '0')
		}
		b = append(b, digits...)
	case k > 0:
		b = append(b, digits[:n-k]...)
		b = append(b, '.')
		b = append(b, digits[n-k:]...)
	default:
		b = append(b, digits...)
		for range -k {
			b = append(b, '0')
		}
	}
	return b, true
}

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

func (a u128) sub(b u128) u128 {
	lo, borrow := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, borrow)
	return u128{hi, lo}
}

// shl returns c·2ˢ (the caller keeps it below 2¹²⁸).
func shl(c uint64, s uint) u128 {
	if s >= 64 {
		return u128{c << (s - 64), 0}
	}
	return u128{c >> (64 - s), c << s}
}

const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// pow10x128 is 10ᵏ for k = 0..22 as (high, low) 64-bit halves.
var pow10x128 = [23][2]uint64{
	{0x0, 0x1},                  // 1e0
	{0x0, 0xa},                  // 1e1
	{0x0, 0x64},                 // 1e2
	{0x0, 0x3e8},                // 1e3
	{0x0, 0x2710},               // 1e4
	{0x0, 0x186a0},              // 1e5
	{0x0, 0xf4240},              // 1e6
	{0x0, 0x989680},             // 1e7
	{0x0, 0x5f5e100},            // 1e8
	{0x0, 0x3b9aca00},           // 1e9
	{0x0, 0x2540be400},          // 1e10
	{0x0, 0x174876e800},         // 1e11
	{0x0, 0xe8d4a51000},         // 1e12
	{0x0, 0x9184e72a000},        // 1e13
	{0x0, 0x5af3107a4000},       // 1e14
	{0x0, 0x38d7ea4c68000},      // 1e15
	{0x0, 0x2386f26fc10000},     // 1e16
	{0x0, 0x16345785d8a0000},    // 1e17
	{0x0, 0xde0b6b3a7640000},    // 1e18
	{0x0, 0x8ac7230489e80000},   // 1e19
	{0x5, 0x6bc75e2d63100000},   // 1e20
	{0x36, 0x35c9adc5dea00000},  // 1e21
	{0x21e, 0x19e0c9bab2400000}, // 1e22
}

package wire

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestShortNumberMatchesStrconv: the fast conversion of features gives
// strconv.ParseFloat's value bit for bit wherever it takes a whole literal
// (digits and decimals at the limits, negative zero, subnormal-looking
// decimals), and takes every literal of at most 15 significant digits and
// 22 decimals without an exponent. Catches a value rounded differently, a
// lost sign, a literal taken that it cannot convert exactly, or a fast
// path that declines what it should take.
func TestShortNumberMatchesStrconv(t *testing.T) {
	lits := []string{"0", "-0", "1", "-1", "0.5", "-0.0", "0.000", "123456789012345", "1234567890123456", "999999999999999",
		"9007199254740993", "0.1", "0.3", "1.000000000000001", "0.0000000000000000000001", "0.00000000000000000000001",
		"0.000000000000000000000123", "1e5", "1E-5", "1.5e+300", "1e999", "-1e999", "1e-400", "4.9e-324", "5e-324",
		"1.7976931348623157e308", "0.066935", "0.000302", "123456.789012345", "1234567.890123456", "100000000000000000000000",
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for range 30000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		lits = append(lits, strconv.FormatFloat(f, 'f', -1, 64))
		digits := rng.IntN(17)
		lits = append(lits, strconv.FormatFloat(rng.Float64()*math.Pow(10, float64(rng.IntN(10))), 'f', digits, 64))
		lits = append(lits, fmt.Sprintf("%d.%0*d", rng.IntN(1000), rng.IntN(25), rng.Int64N(1e15)))
	}
	for _, lit := range lits {
		d := &bagDecoder{s: lit}
		got, ok := d.shortNumber()
		if !ok || d.i != len(lit) {
			if short(lit) {
				t.Fatalf("shortNumber declined %s", lit)
			}
			continue
		}
		if want, _ := strconv.ParseFloat(lit, 64); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("shortNumber(%s) = %v, strconv %v", lit, got, want)
		}
	}
}

// short reports whether lit has no exponent, at most 15 significant digits
// and at most 22 decimals: what shortNumber must take.
func short(lit string) bool {
	if strings.ContainsAny(lit, "eE") {
		return false
	}
	intPart, frac, _ := strings.Cut(strings.TrimPrefix(lit, "-"), ".")
	sig := strings.TrimLeft(intPart+frac, "0")
	return len(sig) <= 15 && len(frac) <= 22
}

// TestShortNumberMatchesNumber: the one-pass reading of a feature gives,
// whenever it takes a literal, the value strconv.ParseFloat gives bit for bit and
// stops where number stops; and it declines what number refuses. Over
// literals on and off its path (exponents, 15 and 16 digits, 22 and 23
// decimals, leading zeros, a bare point or sign) followed by what can
// follow a number in a bag or by garbage. Catches a fast path that reads
// past a literal's end, takes a leading-zero literal number refuses, or
// converts a literal it cannot convert exactly.
func TestShortNumberMatchesNumber(t *testing.T) {
	lits := []string{"0", "-0", "1", "-1", "0.5", "-0.0", "0.000", "123456789012345", "1234567890123456", "999999999999999",
		"0.1", "1.000000000000001", "1.0000000000000001", "0.0000000000000000000001", "0.00000000000000000000001", "1e5", "1E-5",
		"1.5e+300", "0.066935", "-0.000302", "01", "00.5", "-", "-.5", ".5", "1.", "1.e5", "-x", "0x10", "1.5.5", "123456.789012345",
		"100000000000000000000000", "0.1000000000000000000000"}
	rng := rand.New(rand.NewPCG(2, 2))
	for range 20000 {
		lits = append(lits, strconv.FormatFloat(rng.Float64()*math.Pow(10, float64(rng.IntN(12))), 'f', rng.IntN(18), 64),
			fmt.Sprintf("-%d.%0*d", rng.IntN(1000), rng.IntN(25), rng.Int64N(1e15)))
	}
	taken := 0
	for _, lit := range lits {
		for _, after := range []string{"", ",", "]", " ", "e", "x", "5"} {
			src := lit + after
			fast := &bagDecoder{s: src}
			f, ok := fast.shortNumber()
			ref := &bagDecoder{s: src}
			refLit, err := ref.number()
			if !ok {
				if fast.i != 0 {
					t.Fatalf("%q: declined but moved to %d", src, fast.i)
				}
				continue
			}
			taken++
			if err != nil {
				t.Fatalf("%q: taken as %v, number refuses it: %v", src, f, err)
			}
			if fast.i != ref.i {
				t.Fatalf("%q: stopped at %d, number at %d", src, fast.i, ref.i)
			}
			if want, _ := strconv.ParseFloat(refLit, 64); math.Float64bits(f) != math.Float64bits(want) {
				t.Fatalf("%q: %v, strconv %v", src, f, want)
			}
		}
	}
	if taken < len(lits) {
		t.Fatalf("the fast path took only %d of %d readings", taken, 7*len(lits))
	}
}

// TestDecodeReusesNoClassView: the class names of a decoded bag survive
// the decoding of the next bag with the same decoder (whose scratch holds
// them while decoding) and of a change to the first message's bytes, and
// an empty vocabulary decodes as empty, not absent. Catches the decoder's
// scratch leaking into a returned message.
func TestDecodeReusesNoClassView(t *testing.T) {
	var d bagDecoder
	first := []byte(`{"schema_version":1,"id":"a","dim":1,"instances":[[1]],"classes":["x","y","z"],"labels":[2]}`)
	m1, err := d.decode(first, 0)
	if err != nil {
		t.Fatal(err)
	}
	copy(first, bytes.Repeat([]byte{' '}, len(first)))
	m2, err := d.decode([]byte(`{"schema_version":1,"id":"b","dim":1,"instances":[[1]],"classes":["p","q"],"labels":[0]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m1.Classes, []string{"x", "y", "z"}) || !slices.Equal(m2.Classes, []string{"p", "q"}) {
		t.Fatalf("classes %q and %q", m1.Classes, m2.Classes)
	}
	for _, fresh := range []bool{true, false} {
		if fresh {
			d = bagDecoder{}
		}
		m3, err := d.decode([]byte(`{"schema_version":1,"id":"c","dim":1,"instances":[[1]],"classes":[]}`), 0)
		if err != nil {
			t.Fatal(err)
		}
		if m3.Classes == nil || len(m3.Classes) != 0 {
			t.Fatalf("fresh decoder %v: empty vocabulary decoded as %#v", fresh, m3.Classes)
		}
	}
}

package wire

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestShortestMatchesStrconv: the 128-bit shortest formatting gives
// strconv's 'f' bytes for every value it takes: random bits across its
// whole range (2⁻¹⁹ to 2²², both signs), uniform scores in [0, 1), short
// decimals, and the float neighbours of powers of ten and of two; and it
// takes nearly all of them. Catches a digit dropped or kept wrongly at
// the interval's edge (even and odd mantissas), a wrong closer neighbour,
// a misplaced decimal point, and a fast path that quietly declines
// everything.
func TestShortestMatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	lo, hi := math.Float64bits(0x1p-19), math.Float64bits(0x1p22)
	var cases []float64
	for range 1_500_000 {
		x := math.Float64frombits(lo + rng.Uint64N(hi-lo))
		cases = append(cases, x, -x, rng.Float64(), float64(rng.IntN(1_000_000))/math.Pow(10, float64(1+rng.IntN(9))))
	}
	for e := -6; e <= 7; e++ {
		for _, x := range []float64{math.Pow(10, float64(e)), math.Ldexp(1, 3*e)} {
			below, above := x, x
			for range 2000 {
				below, above = math.Nextafter(below, 0), math.Nextafter(above, math.Inf(1))
				cases = append(cases, below, above)
			}
		}
	}
	taken, inRange := 0, 0
	for _, x := range cases {
		got, ok := appendShortest([]byte("p"), x)
		if a := math.Abs(x); a >= 0x1p-19 && a < 0x1p22 {
			inRange++
		}
		if !ok {
			if string(got) != "p" {
				t.Fatalf("%v: declined after appending %q", x, got)
			}
			continue
		}
		taken++
		if want := strconv.AppendFloat([]byte("p"), x, 'f', -1, 64); string(got) != string(want) {
			t.Fatalf("%v (%#x): wrote %s, strconv %s", x, math.Float64bits(x), got[1:], want[1:])
		}
	}
	if taken < inRange*99/100 {
		t.Fatalf("took %d of %d values in range", taken, inRange)
	}
}

// FuzzAppendFloat: the JSON number formatting (its two fast paths and
// strconv) writes what encoding/json writes for any float64.
func FuzzAppendFloat(f *testing.F) {
	for _, x := range []float64{0, 1, 0.5, 0.066935, 1.0 / 3, 1e-6, 0x1p-19, 0x1p22, 1e21, 5e-324, -0.1} {
		f.Add(math.Float64bits(x))
	}
	f.Fuzz(func(t *testing.T, u uint64) {
		x := math.Float64frombits(u)
		got, err := appendFloat(nil, x)
		want, wantErr := json.Marshal(x)
		if (err == nil) != (wantErr == nil) || string(got) != string(want) {
			t.Fatalf("%v: %s (%v), encoding/json %s (%v)", x, got, err, want, wantErr)
		}
	})
}

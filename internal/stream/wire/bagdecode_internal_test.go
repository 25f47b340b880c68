package wire

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestParseFloatMatchesStrconv: the fast conversion of features must give
// strconv.ParseFloat's value bit for bit, on and off its fast path (digits
// and decimals at the limits, exponents, negative zero, subnormals,
// overflow). Catches a value rounded differently, a lost sign, a literal
// taken by the fast path it cannot convert exactly.
func TestParseFloatMatchesStrconv(t *testing.T) {
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
		want, _ := strconv.ParseFloat(lit, 64)
		if got := parseFloat(lit); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseFloat(%s) = %v, strconv %v", lit, got, want)
		}
	}
}

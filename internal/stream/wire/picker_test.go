package wire_test

import (
	"math"
	"math/rand/v2"
)

// picker draws the parts of the random messages that the JSON encoders'
// differential tests hold to encoding/json.
type picker struct {
	rng    *rand.Rand
	strs   []string  // strings, escaping-worthy ones among them
	floats []float64 // numbers at the edges of the formatting paths
}

func (p picker) str() string { return p.strs[p.rng.IntN(len(p.strs))] }

// floats returns nil, empty, or one to five numbers: listed edge cases and
// short decimals (features' typical form) half and half.
func (p picker) floatsOrNil() []float64 {
	switch p.rng.IntN(6) {
	case 0:
		return nil
	case 1:
		return []float64{}
	}
	v := make([]float64, p.rng.IntN(5)+1)
	for i := range v {
		if p.rng.IntN(2) == 0 {
			v[i] = p.floats[p.rng.IntN(len(p.floats))]
		} else {
			v[i] = float64(p.rng.IntN(2000000)-1000000) / 1e6
		}
	}
	return v
}

// ints returns nil, empty, or one to three integers with both extremes.
func (p picker) ints() []int {
	switch p.rng.IntN(3) {
	case 0:
		return nil
	case 1:
		return []int{}
	}
	return []int{p.rng.IntN(5) - 1, math.MaxInt64, math.MinInt64}[:p.rng.IntN(3)+1]
}

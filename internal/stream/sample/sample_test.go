package sample

import (
	"fmt"
	"testing"
)

// TestUnitIsStable pins values computed by the code ingest and the retrainer
// used before they shared this function: a change here would relabel and
// re-split every stream replayed under the same seed.
func TestUnitIsStable(t *testing.T) {
	cases := []struct {
		salt, id string
		want     float64
	}{
		{"1", "bag-0", 0.4443061309847439},
		{"holdout", "bag-0", 0.48116647575233984},
		{"1", "bag-1", 0.3389509967289166},
		{"holdout", "bag-1", 0.27046826941448743},
		{"1", "r2/bag-17", 0.09679261013830853},
		{"holdout", "r2/bag-17", 0.759936109425929},
		{"1", "", 0.6071534176361201},
		{"holdout", "", 0.33451167998610276},
		{"-7", "x", 0.4489025080647875},
	}
	for _, c := range cases {
		if got := Unit(c.salt, c.id); got != c.want {
			t.Errorf("Unit(%q, %q) = %v, want %v", c.salt, c.id, got, c.want)
		}
	}
}

// TestUnitIsUniform checks the deciles of Unit over sequential ids, and
// that two salts choose independently.
func TestUnitIsUniform(t *testing.T) {
	const n = 20000
	var deciles [10]int
	both := 0
	for i := range n {
		id := fmt.Sprintf("bag-%d", i)
		u := Unit("a", id)
		if u < 0 || u >= 1 {
			t.Fatalf("Unit = %v outside [0,1)", u)
		}
		deciles[int(u*10)]++
		if u < 0.5 && Unit("b", id) < 0.5 {
			both++
		}
	}
	// Binomial(20000, 0.1) has sd 42.4; 5 sd is 212.
	for d, c := range deciles {
		if c < n/10-212 || c > n/10+212 {
			t.Errorf("decile %d holds %d of %d", d, c, n)
		}
	}
	// Binomial(20000, 0.25) has sd 61.2; 5 sd is 306.
	if both < n/4-306 || both > n/4+306 {
		t.Errorf("%d ids under 0.5 for both salts, want about %d", both, n/4)
	}
}

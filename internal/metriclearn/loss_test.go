package metriclearn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// deltaBrute forms the n×n partition matrices Ĉ_ij = 1/q_c when i, j share
// cluster c, and sums the squared differences.
func deltaBrute(pred, truth []int) float64 {
	n := len(pred)
	size := func(lab []int) map[int]int {
		m := map[int]int{}
		for _, l := range lab {
			m[l]++
		}
		return m
	}
	qp, qt := size(pred), size(truth)
	s := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var a, b float64
			if pred[i] == pred[j] {
				a = 1 / float64(qp[pred[i]])
			}
			if truth[i] == truth[j] {
				b = 1 / float64(qt[truth[i]])
			}
			s += (a - b) * (a - b)
		}
	}
	return s
}

func randBrute(pred, truth []int) float64 {
	n := len(pred)
	bad := 0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j && (pred[i] == pred[j]) != (truth[i] == truth[j]) {
				bad++
			}
		}
	}
	return float64(bad) / float64(n*(n-1))
}

func TestLossesAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := 0; trial < 300; trial++ {
		n := 2 + rng.IntN(30)
		kp, kt := 1+rng.IntN(4), 1+rng.IntN(4)
		pred, truth := make([]int, n), make([]int, n)
		for i := range pred {
			pred[i], truth[i] = rng.IntN(kp)+10, rng.IntN(kt)
		}
		d, err := DeltaLoss(pred, truth)
		if err != nil {
			t.Fatal(err)
		}
		if want := deltaBrute(pred, truth); math.Abs(d-want) > 1e-9 {
			t.Fatalf("DeltaLoss %v, brute force %v", d, want)
		}
		r, err := RandLoss(pred, truth)
		if err != nil {
			t.Fatal(err)
		}
		if want := randBrute(pred, truth); math.Abs(r-want) > 1e-12 {
			t.Fatalf("RandLoss %v, brute force %v", r, want)
		}
	}
}

func TestDeltaLossKnownValues(t *testing.T) {
	cases := []struct {
		name        string
		pred, truth []int
		want        float64
	}{
		{"identical up to relabeling", []int{1, 1, 0, 0, 2}, []int{0, 0, 2, 2, 1}, 0},
		{"one cluster vs two halves", []int{0, 0, 0, 0}, []int{0, 0, 1, 1}, 1},
	}
	for _, tc := range cases {
		got, err := DeltaLoss(tc.pred, tc.truth)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

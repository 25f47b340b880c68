package ovr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestBaseRowMatchesBase4: BaseRow gives, for every row from its first
// block on, Base4's float bit for bit (which is the one-at-a-time loop's),
// for both kernels, dimensions 0 to 9 and Musk1's 166, row counts that
// leave a partial last block, every starting block, and values whose
// rounding depends on the order of the sums. It catches a lane or block
// mixed up, a sum started elsewhere than at +0, a fused multiply-add, a
// subtraction the other way round (the same square but not for poly) and a
// skipped last block.
func TestBaseRowMatchesBase4(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	dims := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 166}
	for _, dim := range dims {
		for _, n := range []int{1, 3, 4, 5, 8, 13, 18, 37} {
			for _, poly := range []bool{false, true} {
				t.Run(fmt.Sprintf("dim=%d/n=%d/poly=%v", dim, n, poly), func(t *testing.T) {
					rows := make([][]float64, n)
					for i := range rows {
						rows[i] = make([]float64, dim)
						for k := range rows[i] {
							rows[i][k] = r.NormFloat64() * math.Exp(3*r.NormFloat64())
						}
					}
					bl := NewBlocks(rows, dim)
					a := make([]float64, dim)
					for k := range a {
						a[k] = r.NormFloat64() * math.Exp(3*r.NormFloat64())
					}
					zero := make([]float64, dim)
					for from := range bl.NumBlocks() {
						out := make([]float64, 4*(bl.NumBlocks()-from))
						for i := range out {
							out[i] = math.NaN()
						}
						bl.BaseRow(poly, a, from, out)
						for j := 4 * from; j < n; j += 4 {
							var four [4][]float64
							for u := range four {
								four[u] = zero
								if j+u < n {
									four[u] = rows[j+u]
								}
							}
							var want [4]float64
							Base4(poly, a, four[:], &want)
							for u := range 4 {
								if j+u >= n {
									break
								}
								if got := out[j+u-4*from]; math.Float64bits(got) != math.Float64bits(want[u]) {
									t.Fatalf("from block %d, row %d: %v, Base4 %v", from, j+u, got, want[u])
								}
							}
						}
					}
				})
			}
		}
	}
}

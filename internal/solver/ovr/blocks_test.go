package ovr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestBaseRowMatchesBase4: BaseRow gives, for every row from its first
// block on, base4's float bit for bit (which is the one-at-a-time loop's),
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
						// count: all to the end (−1), or some of them,
						// the rest of out left as it was.
						count, end := -1, n
						if r.IntN(2) == 0 {
							count = 1 + r.IntN(bl.NumBlocks()-from)
							end = min(n, 4*(from+count))
						}
						bl.BaseRow(poly, a, from, count, out)
						for i := end - 4*from; i < len(out); i++ {
							if count > 0 && !math.IsNaN(out[i]) && i >= 4*count {
								t.Fatalf("from block %d, %d blocks: out[%d] written", from, count, i)
							}
						}
						for j := 4 * from; j < end; j += 4 {
							var four [4][]float64
							for u := range four {
								four[u] = zero
								if j+u < n {
									four[u] = rows[j+u]
								}
							}
							var want [4]float64
							base4(poly, a, four[:], &want)
							for u := range 4 {
								if j+u >= end {
									break
								}
								if got := out[j+u-4*from]; math.Float64bits(got) != math.Float64bits(want[u]) {
									t.Fatalf("from block %d, row %d: %v, base4 %v", from, j+u, got, want[u])
								}
							}
						}
					}
				})
			}
		}
	}
}

// TestExpScaledMatchesExp: ExpScaled is math.Exp of s·src bit for bit, on
// two million arguments spread over [−750, 750] (both of archExp's range
// checks and its subnormal results), on the squared distances of an RBF
// kernel, and on the edge values (±0, ±708 and their neighbours, ±Inf,
// NaN), in blocks and tails of every length. It fails if math.Exp's
// assembly changes under it, or for a constant, a rounding or a fused
// step that differs from archExp's.
func TestExpScaledMatchesExp(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	check := func(name string, src []float64, s float64) {
		t.Helper()
		dst := make([]float64, len(src))
		ExpScaled(dst, src, s)
		for i, x := range src {
			want := math.Exp(s * x)
			if math.Float64bits(dst[i]) != math.Float64bits(want) && !(math.IsNaN(dst[i]) && math.IsNaN(want)) {
				t.Fatalf("%s: exp(%v · %v) = %v, math.Exp %v", name, s, x, dst[i], want)
			}
		}
	}
	wide := make([]float64, 2_000_000)
	for i := range wide {
		wide[i] = (2*r.Float64() - 1) * 750
	}
	check("uniform on [-750, 750]", wide, 1)
	check("uniform, s = -1", wide, -1)
	dist := make([]float64, 100_000)
	for i := range dist {
		dist[i] = r.ExpFloat64() * 300
	}
	check("squared distances, gamma 1/166", dist, -1.0/166)
	check("squared distances, gamma 4/166", dist, -4.0/166)
	edges := []float64{0, math.Copysign(0, -1), 708, -708, math.Nextafter(708, 709), math.Nextafter(-708, -709),
		709.78, -745.2, -746, 1e-300, -1e-300, math.Inf(1), math.Inf(-1), math.NaN(), 1, -1, 0.5}
	for n := range len(edges) + 1 {
		check(fmt.Sprintf("edges[:%d]", n), edges[:n], 1)
		check(fmt.Sprintf("edges[%d:]", n), edges[n:], -1)
	}
	// In place, as misvm's kernel matrix maps its pair matrix.
	in := append([]float64(nil), dist[:1001]...)
	ExpScaled(in, in, -0.01)
	for i, x := range dist[:1001] {
		if want := math.Exp(-0.01 * x); in[i] != want {
			t.Fatalf("in place: %v, math.Exp %v", in[i], want)
		}
	}
}

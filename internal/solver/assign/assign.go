// Package assign solves the rectangular linear assignment problem exactly:
// given an r×c cost matrix, choose min(r, c) cells, at most one per row and
// one per column, of least total cost. MIMLCA uses it to assign the instances
// of a bag to the bag's candidate labels (Law et al. 2017, eq. 13).
package assign

import (
	"fmt"
	"math"
)

// Solve returns, for each row, the column assigned to it (-1 when the row is
// left out because there are more rows than columns) and the total cost.
// cost is row-major with rows*cols entries; every entry must be finite.
//
// It is the shortest-augmenting-path form of the Hungarian algorithm
// (Kuhn-Munkres with potentials), O(p²q) for p = min(r,c), q = max(r,c):
// the rectangular extension of Bourgeois and Lassalle needs nothing more
// than running it over the smaller side.
func Solve(cost []float64, rows, cols int) ([]int, float64, error) {
	if rows < 0 || cols < 0 || len(cost) != rows*cols {
		return nil, 0, fmt.Errorf("assign: cost has %d entries, want %d×%d", len(cost), rows, cols)
	}
	for i, v := range cost {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, 0, fmt.Errorf("assign: cost[%d,%d] = %v is not finite", i/max(cols, 1), i%max(cols, 1), v)
		}
	}
	rowToCol := make([]int, rows)
	for i := range rowToCol {
		rowToCol[i] = -1
	}
	if rows == 0 || cols == 0 {
		return rowToCol, 0, nil
	}
	// The core works with n "left" nodes and m >= n "right" nodes; transpose
	// when there are more rows than columns.
	n, m := rows, cols
	a := cost
	if rows > cols {
		// The transpose, materialised: the inner loop of hungarian then
		// reads a row of a contiguous matrix instead of calling an
		// accessor per cell (same values, so the same assignment).
		n, m = cols, rows
		a = make([]float64, n*m)
		for i := range n {
			for j := range m {
				a[i*m+j] = cost[j*cols+i]
			}
		}
	}
	leftToRight := hungarian(n, m, a)
	total := 0.0
	for i, j := range leftToRight {
		if rows > cols {
			rowToCol[j] = i
			total += cost[j*cols+i]
		} else {
			rowToCol[i] = j
			total += cost[i*cols+j]
		}
	}
	return rowToCol, total, nil
}

// hungarian assigns each of the n left nodes to a distinct right node
// (n <= m) at minimum total cost a[i*m+j]. Indices inside are 1-based with 0
// as the virtual source, as in the classic formulation.
func hungarian(n, m int, a []float64) []int {
	// One allocation for the float and one for the int arrays: MIMLCA
	// solves one small problem per bag and k-means iteration.
	fs := make([]float64, n+1+2*(m+1))
	u := fs[:n+1]       // left potentials
	v := fs[n+1:][:m+1] // right potentials
	minv := fs[n+m+2:][:m+1]
	is := make([]int, 2*(m+1))
	p := is[:m+1] // p[j]: left node matched to right node j (0 = free)
	way := is[m+1:]
	used := make([]bool, m+1)
	for i := 1; i <= n; i++ {
		p[0] = i
		j0 := 0
		for j := range minv {
			minv[j] = math.Inf(1)
			used[j] = false
		}
		for {
			used[j0] = true
			i0 := p[j0]
			row := a[(i0-1)*m:][:m]
			ui := u[i0]
			delta := math.Inf(1)
			j1 := -1
			for j := 1; j <= m; j++ {
				if used[j] {
					continue
				}
				cur := row[j-1] - ui - v[j]
				if cur < minv[j] {
					minv[j] = cur
					way[j] = j0
				}
				if minv[j] < delta {
					delta = minv[j]
					j1 = j
				}
			}
			for j := 0; j <= m; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		// Augment along the alternating path back to the source.
		for j0 != 0 {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
		}
	}
	out := make([]int, n)
	for j := 1; j <= m; j++ {
		if p[j] != 0 {
			out[p[j]-1] = j - 1
		}
	}
	return out
}

// Cover labels each of n instances with one of k labels, every label
// on at least one instance (n >= k), at the least total cost: cost is n
// rows of stride cols >= k, cost[i*cols+t] the cost of label t for
// instance i. Given such a labeling, one instance per label forms a
// matching and every other instance is best on its cheapest label; so the
// optimum is every instance on its cheapest label, except the instances of
// the matching of least total excess (cost above the row's cheapest),
// found by Solve on the n x k excess matrix
// (TestCoverMatchesEnumeration). It returns the labels (0..k-1) and
// the total cost.
func Cover(cost []float64, n, k, cols int) ([]int, float64, error) {
	if n < k || k < 1 || cols < k || len(cost) < (n-1)*cols+k {
		return nil, 0, fmt.Errorf("assign: cover: %d instances, %d labels, stride %d, %d costs", n, k, cols, len(cost))
	}
	labels := make([]int, n)
	excess := make([]float64, n*k)
	for i := range n {
		row := cost[i*cols:][:k]
		best := 0
		for t := 1; t < k; t++ {
			if row[t] < row[best] {
				best = t
			}
		}
		labels[i] = best
		for t, v := range row {
			excess[i*k+t] = v - row[best]
		}
	}
	rowToCol, _, err := Solve(excess, n, k)
	if err != nil {
		return nil, 0, err
	}
	total := 0.0
	for i, t := range rowToCol {
		if t >= 0 {
			labels[i] = t
		}
		total += cost[i*cols+labels[i]]
	}
	return labels, total, nil
}

package metriclearn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// KMeans clusters the rows of x into k clusters with Lloyd's algorithm from a
// k-means++ start, keeping the best of restarts runs (least within-cluster
// sum of squares). It returns the cluster of each row and that energy.
func KMeans(x *mat.Dense, k, restarts int, rng *rand.Rand) ([]int, float64, error) {
	n, d := x.Dims()
	if k <= 0 || k > n {
		return nil, 0, fmt.Errorf("mlca: k-means with k=%d on %d rows", k, n)
	}
	restarts = max(restarts, 1)
	var best []int
	bestE := math.Inf(1)
	for range restarts {
		lab, e := lloyd(x, n, d, k, rng)
		if e < bestE {
			best, bestE = lab, e
		}
	}
	return best, bestE, nil
}

func sqDist(a, b []float64) float64 {
	s := 0.0
	b = b[:len(a)] // one bounds check, not one per coordinate
	for i := range a {
		t := a[i] - b[i]
		s += t * t
	}
	return s
}

func lloyd(x *mat.Dense, n, d, k int, rng *rand.Rand) ([]int, float64) {
	// k-means++ seeding.
	centres := make([][]float64, k)
	centres[0] = append([]float64(nil), x.RawRowView(rng.IntN(n))...)
	dist := make([]float64, n)
	for i := range dist {
		dist[i] = sqDist(x.RawRowView(i), centres[0])
	}
	for c := 1; c < k; c++ {
		total := 0.0
		for _, v := range dist {
			total += v
		}
		pick := rng.IntN(n)
		if total > 0 {
			r := rng.Float64() * total
			for i, v := range dist {
				r -= v
				if r <= 0 {
					pick = i
					break
				}
			}
		}
		centres[c] = append([]float64(nil), x.RawRowView(pick)...)
		for i := range dist {
			dist[i] = min(dist[i], sqDist(x.RawRowView(i), centres[c]))
		}
	}
	labels := make([]int, n)
	for i := range labels {
		labels[i] = -1
	}
	counts := make([]int, k)
	energy := 0.0
	for iter := 0; iter < 300; iter++ {
		changed := false
		energy = 0
		for i := 0; i < n; i++ {
			row := x.RawRowView(i)
			bc, bd := 0, math.Inf(1)
			for c := range centres {
				if dd := sqDist(row, centres[c]); dd < bd {
					bc, bd = c, dd
				}
			}
			energy += bd
			if labels[i] != bc {
				labels[i] = bc
				changed = true
			}
		}
		if !changed {
			break
		}
		for c := range centres {
			clear(centres[c])
			counts[c] = 0
		}
		for i := 0; i < n; i++ {
			c := labels[i]
			counts[c]++
			for j, v := range x.RawRowView(i) {
				centres[c][j] += v
			}
		}
		for c := range centres {
			if counts[c] > 0 {
				for j := 0; j < d; j++ {
					centres[c][j] /= float64(counts[c])
				}
			}
		}
		for c := range centres {
			if counts[c] == 0 {
				// Re-seed an emptied cluster on the worst-fitted row, as
				// MATLAB's kmeans does ('singleton' action).
				far, fd := 0, -1.0
				for i := 0; i < n; i++ {
					if dd := sqDist(x.RawRowView(i), centres[labels[i]]); dd > fd {
						far, fd = i, dd
					}
				}
				copy(centres[c], x.RawRowView(far))
				labels[far] = c
				counts[c] = 1
			}
		}
	}
	return labels, energy
}

// Cluster partitions a test set X_t (rows) into k clusters under the metric
// M = W Wᵀ, as the MLCA paper does at test time. With withSVD (Section 3.4,
// the default of the spec) k-means runs on the k leading left singular
// vectors of X_t W; without it, on the rows of X_t W (plain k-means under the
// learned metric). A nil W means the Euclidean metric (k-means on X_t).
func Cluster(xt, w *mat.Dense, k, restarts int, withSVD bool, rng *rand.Rand) ([]int, error) {
	var p *mat.Dense
	if w == nil {
		p = mat.DenseCopyOf(xt)
	} else {
		p = new(mat.Dense)
		p.Mul(xt, w)
	}
	if withSVD {
		var svd mat.SVD
		if !svd.Factorize(p, mat.SVDThin) {
			return nil, fmt.Errorf("mlca: SVD of the projected test set did not converge")
		}
		var u mat.Dense
		svd.UTo(&u)
		r, c := u.Dims()
		p = mat.DenseCopyOf(u.Slice(0, r, 0, min(k, c)))
	}
	lab, _, err := KMeans(p, k, restarts, rng)
	return lab, err
}

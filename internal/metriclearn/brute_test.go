package metriclearn

import (
	"cmp"
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
)

// This file keeps the brute-force citation radii that the index replaced,
// as the reference the index is checked against (citeindex_test.go) and
// timed against (BenchmarkCitationKNNIndex): every training bag's radius
// from all m² pairs. The brute-force query is citationKNNScan (below),
// which citationKNNBounded, the path under the maximal Hausdorff distance,
// replaced in production.

// citeRadiiBrute computes, for every training bag, the distance to its c-th
// nearest other training bag. It is O(m²) bag distances: the price of
// citation-kNN, paid once per fit, in parallel over bags (each worker owns
// its output slots, so the result does not depend on the worker count).
func citeRadiiBrute(ctx context.Context, bags [][][]float64, c int, dist func(a, b [][]float64, bound float64) float64, workers int) ([]float64, error) {
	return citeRadiiBrutePrefix(ctx, bags, len(bags), c, dist, workers)
}

// citeRadiiBrutePrefix is citeRadiiBrute for the first m bags only (each
// against all bags), so the benchmark can time a sample of a size whose
// full O(m²) scan would take hours.
func citeRadiiBrutePrefix(ctx context.Context, bags [][][]float64, m, c int, dist func(a, b [][]float64, bound float64) float64, workers int) ([]float64, error) {
	out := make([]float64, m)
	if c == 0 {
		return out, nil
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// top holds the c smallest distances so far, ascending; once
			// full, its last entry bounds the distances worth computing.
			top := make([]float64, 0, c)
			for i := range next {
				top = top[:0]
				for j := range bags {
					if j == i {
						continue
					}
					bound := math.Inf(1)
					if len(top) == c {
						bound = top[c-1]
					}
					d := dist(bags[i], bags[j], bound)
					if d >= bound {
						continue
					}
					pos, _ := slices.BinarySearch(top, d)
					if len(top) < c {
						top = append(top, 0)
					}
					copy(top[pos+1:], top[pos:len(top)-1])
					top[pos] = d
				}
				if len(top) == 0 {
					out[i] = -1 // nobody to compare with: cites nothing (distances are >= 0)
					continue
				}
				out[i] = top[len(top)-1]
			}
		}()
	}
	var err error
	for i := 0; i < m; i++ {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return out, err
}

// citationKNNScan is citationKNN by a scan of every training bag, as it was
// before the index: the reference the index and, under the maximal
// Hausdorff distance, citationKNNBounded are checked against. It is the
// citation-kNN of Wang and Zucker (2000), extended to label sets as in
// Zhou's MIML experiments: the voters are the Refs nearest training bags (references) and the
// training bags that would count the new bag among their Citers nearest
// neighbours (citers); class c is predicted when more than half of the votes
// carry it. When no class reaches a majority the best-scored one is
// predicted, since every bag of these collections has at least one label.
//
// The score of class c is (votes_c + 0.5/(1 + r_c)) / votes, where r_c is the
// rank (by distance) of the nearest training bag carrying c. The bonus is
// below one vote, so it only orders classes with equal vote counts (the
// ranking measures count ties pessimistically).
func (m *Model) citationKNNScan(g [][]float64) ([]int, []float64) {
	k := len(m.meta.Classes)
	type nb struct {
		d float64
		i int
	}
	all := make([]nb, len(m.st.TrainBags))
	votes := make([]float64, k)
	total := 0.0
	dist := bagDistance(m.st.Hausdorff)
	for i, tb := range m.st.TrainBags {
		d := dist(g, tb, math.Inf(1))
		all[i] = nb{d, i}
		if m.st.Citers > 0 && d <= m.st.CiteRadius[i] {
			for _, c := range m.st.TrainLabels[i] {
				votes[c]++
			}
			total++
		}
	}
	slices.SortFunc(all, func(a, b nb) int {
		return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.i, b.i))
	})
	for _, n := range all[:min(m.st.Refs, len(all))] {
		for _, c := range m.st.TrainLabels[n.i] {
			votes[c]++
		}
		total++
	}
	rank := make([]int, k)
	for c := range rank {
		rank[c] = -1
	}
	left := k
	for r, n := range all {
		for _, c := range m.st.TrainLabels[n.i] {
			if rank[c] < 0 {
				rank[c] = r
				left--
			}
		}
		if left == 0 {
			break
		}
	}
	return voteLabels(votes, rank, total)
}

// bagDistance is the bag distance the reference scans use: the Hausdorff
// distance named, computed in full below bound.
func bagDistance(name string) func(a, b [][]float64, bound float64) float64 {
	if name == HausdorffMax {
		return maxHausdorffBelow
	}
	return minHausdorffBelow
}

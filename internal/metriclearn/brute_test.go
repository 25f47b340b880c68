package metriclearn

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
)

// This file keeps the brute-force citation radii that the index replaced,
// as the reference the index is checked against (citeindex_test.go) and
// timed against (BenchmarkCitationKNNIndex): every training bag's radius
// from all m² pairs. The brute-force query is citationKNNScan (model.go),
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

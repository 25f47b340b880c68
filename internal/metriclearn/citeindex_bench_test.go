package metriclearn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/modeltest"
	"github.com/mimlstream/mimlstream/internal/testsupport/synth"
)

// benchQueries is the number of held-out bags the query benchmarks cycle
// through.
const benchQueries = 200

// citeBench is the data of one size: the projected training bags and their
// labels, and projected held-out query bags.
type citeBench struct {
	bags    [][][]float64
	labels  [][]int
	queries [][][]float64
	k       int
}

// newCiteBench draws m + benchQueries bags shaped like MSCV2 (48 dims, 23
// classes, about 3 instances per bag), learns the metric (supervised MLCA,
// k = 23 output dimensions) on the first 2000 bags, and projects all of
// them: the index then works in the space a fitted model uses.
func newCiteBench(b *testing.B, m int) *citeBench {
	b.Helper()
	g := synth.MSCV2Like(1)
	g.Bags = m + benchQueries
	ds, err := g.Generate(rand.New(rand.NewPCG(1, uint64(m))))
	if err != nil {
		b.Fatal(err)
	}
	fit, err := FitSupervised(context.Background(), "mlca", ds.Subset(modeltest.Seq(0, min(2000, m))),
		models.FitOptions{Seed: 1, Params: models.Params{"refs": "0", "citers": "0"}})
	if err != nil {
		b.Fatal(err)
	}
	p := &fit.State().Projection
	project := func(bag *mil.Bag) [][]float64 {
		out := make([][]float64, len(bag.Instances))
		for j, x := range bag.Instances {
			out[j] = make([]float64, p.OutDim)
			p.apply(x, out[j], nil)
		}
		return out
	}
	cb := &citeBench{k: len(ds.Classes)}
	for i := range ds.Bags {
		if i < m {
			cb.bags = append(cb.bags, project(&ds.Bags[i]))
			cb.labels = append(cb.labels, ds.Bags[i].Labels)
		} else {
			cb.queries = append(cb.queries, project(&ds.Bags[i]))
		}
	}
	return cb
}

// BenchmarkCitationKNNIndex measures the citation-kNN index against the
// brute-force scan it replaced (brute_test.go), on MSCV2-shaped synthetic
// data projected by a learned metric (23 dims), refs = citers = 20, at 2k,
// 20k and 200k training bags, for both Hausdorff distances:
//
//   - build: what a fit or a decode pays for citation-kNN. Index: the tree
//     and every bag's citation radius by index searches; brute: the radii
//     from all m² pairs. At 200k bags both are timed on the radii of a
//     sample of the bags (1000 index, 500 brute) and reported as
//     est-s/build, scaled to all m bags; the queries there run without
//     citers (no radii), as query-nociters.
//   - query: one bag's citation-kNN (references, citers, rank bonus), per
//     held-out bag (an op runs all 200), on the same model for both paths.
//
// cpu-s is CPU time (the machine is shared, so wall time alone misleads).
//
//	nice go test -run '^$' -bench 'CitationKNNIndex/bags=(2000|20000)$' -benchtime 1x -timeout 60m ./internal/metriclearn/
//	nice go test -run '^$' -bench 'CitationKNNIndex/bags=200000$' -benchtime 1x -timeout 60m ./internal/metriclearn/
func BenchmarkCitationKNNIndex(b *testing.B) {
	const refs, citers = 20, 20
	workers := runtime.GOMAXPROCS(0)
	for _, m := range []int{2000, 20000, 200000} {
		var cb *citeBench // drawn on first use, shared by the sub-benchmarks of m
		data := func(b *testing.B) *citeBench {
			if cb == nil {
				b.StopTimer()
				cb = newCiteBench(b, m)
				b.StartTimer()
			}
			return cb
		}
		for _, h := range []string{HausdorffMin, HausdorffMax} {
			var model *Model
			full := m <= 20000 || os.Getenv("CITEINDEX_FULL") == "1"
			if !full {
				// The full build takes about an hour of CPU at 200k
				// bags (the radii search is linear in m per bag on
				// this data: see docs/reproductions/mimlca-mlca.md); by default it is
				// estimated from the tree and the radii of the first
				// 1000 bags, scaled to m (CITEINDEX_FULL=1 runs it).
				b.Run(fmt.Sprintf("bags=%d/%s/build/index-sample", m, h), func(b *testing.B) {
					cb := data(b)
					var tree, radii, treeCPU, radiiCPU time.Duration
					for b.Loop() {
						t0, c0 := time.Now(), cpuTime()
						ix := newBagScan(cb.bags) // as Build does
						if h == HausdorffMin {
							ix = newBagIndex(cb.bags, len(cb.bags[0][0]))
						}
						t1, c1 := time.Now(), cpuTime()
						if _, err := ix.citeRadiiPrefix(context.Background(), 1000, citers, h == HausdorffMax, workers); err != nil {
							b.Fatal(err)
						}
						tree += t1.Sub(t0)
						radii += time.Since(t1)
						treeCPU += c1 - c0
						radiiCPU += cpuTime() - c1
					}
					n, scale := float64(b.N), float64(m)/1000
					b.ReportMetric(tree.Seconds()/n, "tree-s")
					b.ReportMetric(treeCPU.Seconds()/n, "tree-cpu-s")
					b.ReportMetric((tree.Seconds()+radii.Seconds()*scale)/n, "est-s/build")
					b.ReportMetric((treeCPU.Seconds()+radiiCPU.Seconds()*scale)/n, "est-cpu-s/build")
				})
			}
			b.Run(fmt.Sprintf("bags=%d/%s/build/index", m, h), func(b *testing.B) {
				if !full {
					b.Skip("set CITEINDEX_FULL=1 for the full build at this size")
				}
				cb := data(b)
				cpu0 := cpuTime()
				for b.Loop() {
					model = indexedModel(b, cb.bags, cb.labels, len(cb.bags[0][0]), cb.k, refs, citers, h, workers, leafSize)
				}
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/build")
				b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/build")
			})
			b.Run(fmt.Sprintf("bags=%d/%s/build/brute", m, h), func(b *testing.B) {
				cb := data(b)
				dist := bagDistance(h)
				sample := m
				if !full {
					// The brute-force radii of 500 bags, each against
					// all m, timed and scaled to m.
					sample = 500
				}
				cpu0 := cpuTime()
				for b.Loop() {
					if _, err := citeRadiiBrutePrefix(context.Background(), cb.bags, sample, citers, dist, workers); err != nil {
						b.Fatal(err)
					}
				}
				scale := float64(m) / float64(sample)
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*scale, "est-s/build")
				b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N)*scale, "est-cpu-s/build")
			})
			query := "query"
			if model == nil {
				// Without the full build there are no radii: time the
				// references and the rank bonus alone (citers=0), on
				// both paths alike.
				query = "query-nociters"
			}
			for _, path := range []string{"index", "brute"} {
				b.Run(fmt.Sprintf("bags=%d/%s/%s/%s", m, h, query, path), func(b *testing.B) {
					cb := data(b)
					if model == nil {
						b.StopTimer()
						model = indexedModel(b, cb.bags, cb.labels, len(cb.bags[0][0]), cb.k, refs, 0, h, workers, leafSize)
						b.StartTimer()
					}
					q := cb.queries
					cpu0 := cpuTime()
					for b.Loop() {
						// One op annotates every query bag: one bag
						// alone is too short to time against the
						// shared machine's noise.
						for _, g := range q {
							if path == "index" {
								model.citationKNN(g)
							} else {
								model.citationKNNScan(g)
							}
						}
					}
					per := float64(b.N * len(q))
					b.ReportMetric(float64(b.Elapsed().Microseconds())/per, "µs/bag")
					b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/per, "cpu-µs/bag")
				})
			}
		}
	}
}

// cpuTime is the user+system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

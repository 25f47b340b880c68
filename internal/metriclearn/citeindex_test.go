package metriclearn

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/models"
)

// randomBags draws m bags of 1..maxInst points in dim dimensions. With grid
// > 0 the coordinates are integers in [0, grid), so that distances tie
// often (and exactly), and a fifth of the bags are copies of earlier bags:
// the tie-break by bag number is then what orders neighbours. Otherwise the
// points are Gaussian, at a scale drawn per bag from {0.1, 1, 10}, so that
// the citation radii differ widely between bags. With empty, a tenth of the
// bags have no instance (a validated data set has none, but a decoded state
// is not checked for them, and the scan orders them last).
func randomBags(rng *rand.Rand, m, dim, maxInst, grid int, empty bool) [][][]float64 {
	bags := make([][][]float64, m)
	for i := range bags {
		if grid > 0 && i > 0 && rng.IntN(5) == 0 {
			bags[i] = bags[rng.IntN(i)]
			continue
		}
		b := make([][]float64, 1+rng.IntN(maxInst))
		if empty && rng.IntN(10) == 0 {
			bags[i] = nil
			continue
		}
		scale := []float64{0.1, 1, 10}[rng.IntN(3)]
		for j := range b {
			b[j] = make([]float64, dim)
			for t := range b[j] {
				if grid > 0 {
					b[j][t] = float64(rng.IntN(grid))
				} else {
					b[j][t] = scale * rng.NormFloat64()
				}
			}
		}
		bags[i] = b
	}
	return bags
}

// indexedModel builds a Model over the given projected training bags
// (identity projection), with its radii from the index.
func indexedModel(t testing.TB, bags [][][]float64, labels [][]int, dim, k, refs, citers int, hausdorff string, workers, leaf int) *Model {
	t.Helper()
	cent := make([][]float64, k)
	cent[0] = make([]float64, dim)
	st := State{Projection: Projection{Kernel: KernelLinear, InDim: dim, OutDim: dim}, Centroids: cent,
		Rule: RuleCentroid, Refs: refs, Citers: citers, Hausdorff: hausdorff, TrainBags: bags, TrainLabels: labels}
	idx := newBagScan(bags) // as Build does
	if hausdorff == HausdorffMin {
		idx = newBagIndexLeaf(bags, dim, leaf)
	}
	var err error
	if st.CiteRadius, err = idx.citeRadii(context.Background(), citers, hausdorff == HausdorffMax, workers); err != nil {
		t.Fatal(err)
	}
	classes := make([]string, k)
	for c := range classes {
		classes[c] = fmt.Sprint("c", c)
	}
	m, err := newModel(models.Meta{Kind: "mlca", Classes: classes, Dim: dim}, st, idx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCitationIndexMatchesBruteForce is the differential test of the index
// against the scan it replaced, on random data with and without ties,
// duplicate bags and bags without instances, for both Hausdorff distances.
// It catches an index that misses a neighbour or a citer (a node bound that
// is not a lower bound, a wrong largest radius per node), orders tied bags
// other than by bag number, stops the references or the rank search early,
// or computes a radius wrongly (either distance, any worker count); it
// compares radii, the full neighbour order, the labels and the scores with
// ==, not within a tolerance.
func TestCitationIndexMatchesBruteForce(t *testing.T) {
	var cases []citeCase
	for _, h := range []string{HausdorffMin, HausdorffMax} {
		cases = append(cases,
			citeCase{200, 3, 4, 3, 5, 4, h, false},    // heavy ties and duplicates
			citeCase{300, 5, 3, 0, 20, 20, h, false},  // continuous
			citeCase{150, 2, 5, 2, 7, 3, h, false},    // almost everything ties
			citeCase{100, 23, 3, 0, 20, 20, h, false}, // MSCV2's projected dimension
			citeCase{40, 4, 3, 4, 0, 5, h, false},     // citers only
			citeCase{40, 4, 3, 4, 6, 0, h, false},     // references only
			citeCase{12, 3, 2, 3, 50, 50, h, false},   // refs and citers beyond m
			citeCase{1, 3, 2, 0, 3, 3, h, false},      // a single bag: radius -1
			citeCase{600, 3, 1, 4, 20, 20, h, false},  // single instances: many identical points
			citeCase{80, 3, 3, 3, 70, 5, h, true},     // bags without instances, reached by the references
			citeCase{50, 3, 3, 1, 10, 10, h, false},   // every point identical: one leaf, all distances 0
		)
	}
	for n, c := range cases {
		t.Run(fmt.Sprintf("%d/m=%d/dim=%d/grid=%d/r=%d/c=%d/%s/empty=%t", n, c.m, c.dim, c.grid, c.refs, c.citers, c.hausdorff, c.empty), func(t *testing.T) {
			checkCitationIndex(t, uint64(n), c)
		})
	}
}

// FuzzCitationIndex runs the same comparison on fuzzer-chosen shapes (sizes
// kept small so each input runs in milliseconds):
//
//	go test -run '^$' -fuzz FuzzCitationIndex -fuzztime 1m ./internal/metriclearn/
func FuzzCitationIndex(f *testing.F) {
	f.Add(uint64(1), uint8(60), uint8(3), uint8(3), uint8(3), uint8(5), uint8(4), false, false)
	f.Add(uint64(2), uint8(90), uint8(5), uint8(2), uint8(0), uint8(20), uint8(20), true, true)
	f.Fuzz(func(t *testing.T, seed uint64, m, dim, maxInst, grid, refs, citers uint8, maximal, empty bool) {
		c := citeCase{m: 1 + int(m)%120, dim: 1 + int(dim)%8, maxInst: 1 + int(maxInst)%5, grid: int(grid) % 5,
			refs: int(refs) % 30, citers: int(citers) % 30, hausdorff: HausdorffMin, empty: empty}
		if maximal {
			c.hausdorff = HausdorffMax
		}
		checkCitationIndex(t, seed, c)
	})
}

// citeCase is one shape of random data for checkCitationIndex.
type citeCase struct {
	m, dim, maxInst, grid int
	refs, citers          int
	hausdorff             string
	empty                 bool
}

// checkCitationIndex draws bags, labels and queries of shape c from seed
// and fails unless the index's radii, neighbour order, labels and scores
// equal the brute force's exactly.
func checkCitationIndex(t *testing.T, seed uint64, c citeCase) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	const k = 6
	bags := randomBags(rng, c.m, c.dim, c.maxInst, c.grid, c.empty)
	labels := make([][]int, c.m)
	for i := range labels {
		// Class 5 is carried by no bag: its rank stays -1 and the
		// rank search must not stop early waiting for it.
		labels[i] = []int{rng.IntN(k - 1)}
		if rng.IntN(2) == 0 {
			labels[i] = append(labels[i], rng.IntN(k-1))
		}
		slices.Sort(labels[i])
		labels[i] = slices.Compact(labels[i])
	}
	queries := randomBags(rng, 30, c.dim, c.maxInst, c.grid, false)
	for _, b := range bags[:min(10, len(bags))] {
		if len(b) > 0 {
			queries = append(queries, b) // a query equal to a training bag
		}
	}
	dist := bagDistance(c.hausdorff)
	// Leaves of 1 and 2 points make deep trees of these small
	// sets; leafSize is the production tree.
	for _, w := range [][2]int{{1, 1}, {3, 2}, {2, leafSize}} {
		m := indexedModel(t, bags, labels, c.dim, k, c.refs, c.citers, c.hausdorff, w[0], w[1])
		want, err := citeRadiiBrute(context.Background(), bags, c.citers, dist, w[0])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(m.st.CiteRadius, want) {
			t.Fatalf("workers, leaf=%v: radii differ from the brute force:\n%v\n%v", w, m.st.CiteRadius, want)
		}
		// The stream is checked on its own index: a model
		// under the maximal distance keeps none.
		ix := newBagIndexLeaf(bags, c.dim, w[1])
		s := ix.pool.Get().(*queryScratch)
		for qi, q := range queries {
			// Full order: the stream, run to the end, is the
			// sort by minimal Hausdorff distance (the distance
			// it serves under both settings).
			want := make([]neighbour, len(bags))
			for i, b := range bags {
				want[i] = neighbour{minHausdorffBelow(q, b, math.Inf(1)), i}
			}
			slices.SortFunc(want, func(a, b neighbour) int { return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.bag, b.bag)) })
			var got []neighbour
			st := ix.newMinStream(q, -1, s)
			for n, ok := st.next(); ok; n, ok = st.next() {
				got = append(got, n)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("leaf=%d query %d: stream order differs from the sort:\n got %v\nwant %v", w[1], qi, got, want)
			}
			gl, gs := m.citationKNN(q)
			wl, ws := m.citationKNNScan(q)
			if !slices.Equal(gl, wl) || !slices.Equal(gs, ws) {
				t.Fatalf("leaf=%d query %d: index labels %v scores %v, brute force %v %v", w[1], qi, gl, gs, wl, ws)
			}
		}
		ix.pool.Put(s)
	}
}

// TestSelectNth checks the partition the tree splits with, against a sort,
// on keys with many duplicates (ties broken by number). It catches a
// quickselect that loses or duplicates elements or misplaces the median,
// which would unbalance the tree (the tree's results do not depend on it,
// but its cost does).
func TestSelectNth(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 5, 17, 100, 1000} {
		for _, distinct := range []int{1, 3, 1000} {
			keys := make([]int, n)
			for i := range keys {
				keys[i] = rng.IntN(distinct)
			}
			less := func(a, b int32) bool { return keys[a] < keys[b] || keys[a] == keys[b] && a < b }
			a := make([]int32, n)
			for i := range a {
				a[i] = int32(i)
			}
			rng.Shuffle(n, func(i, j int) { a[i], a[j] = a[j], a[i] })
			k := rng.IntN(n)
			selectNth(a, k, less)
			sorted := slices.Clone(a)
			slices.SortFunc(sorted, func(x, y int32) int {
				if less(x, y) {
					return -1
				}
				return 1
			})
			if a[k] != sorted[k] {
				t.Fatalf("n=%d distinct=%d: a[%d] = %d, want %d", n, distinct, k, a[k], sorted[k])
			}
			for i := range a {
				if (i < k && less(a[k], a[i])) || (i > k && less(a[i], a[k])) {
					t.Fatalf("n=%d distinct=%d: element %d on the wrong side of rank %d", n, distinct, i, k)
				}
			}
			slices.Sort(sorted)
			for i := range sorted {
				if sorted[i] != int32(i) {
					t.Fatalf("n=%d: selectNth lost or duplicated elements", n)
				}
			}
		}
	}
}

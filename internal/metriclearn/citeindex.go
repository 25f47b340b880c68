package metriclearn

import (
	"context"
	"math"
	"runtime"
	"sync"
)

// leafSize bounds the points of a k-d tree leaf. Small leaves prune more
// nodes; 16 keeps the per-node heap traffic below the distance work in the
// 5- to 50-dimensional projected spaces of the metric models.
const leafSize = 16

// bagIndex is a k-d tree over the projected instances of the training bags,
// each point tagged with its bag. It answers the three questions
// citation-kNN asks without scanning every bag:
//
//   - the training bags in increasing minimal Hausdorff distance to a query
//     bag (best-first search over the instances: the minimal Hausdorff
//     distance is the distance of the nearest instance pair, so the first
//     point of a bag to come out of the search gives that bag's distance);
//   - the same order under the maximal Hausdorff distance, by exact
//     computations on bags taken in minimal-Hausdorff order, which is a
//     lower bound (see maxStream);
//   - the citers, bags i with d(query, i) <= radius_i, by a search that
//     skips every node whose distance lower bound exceeds the largest radius
//     of the bags below it.
//
// Distances are computed from the same float64 values, in the same
// coordinate order, as minHausdorffBelow and maxHausdorffBelow, and a node's
// lower bound sums squared gaps in that order too; floating-point rounding is
// monotone, so the bound never exceeds the computed distance of a point
// below it and the results are bit-identical to the brute-force scan (ties
// included: see itemLess).
//
// The tree is built from the model state at fit and decode time and is not
// serialized, so the model format is unchanged. It is immutable after
// setRadii; queries use per-call scratch (scratchPool).
type bagIndex struct {
	dim   int
	leaf  int32 // most points of a leaf
	nbags int
	pts   []float64 // point p is pts[p*dim : (p+1)*dim], in tree order
	bagOf []int32   // bag of point p
	nodes []kdNode  // preorder: children follow their parent
	box   []float64 // node n: lo = box[2*n*dim:][:dim], hi = box[(2*n+1)*dim:][:dim]
	// radius[i] is the citation radius of bag i (nil until setRadii).
	radius []float64
	bags   [][][]float64 // the training bags, for exact maximal Hausdorff distances
	pool   sync.Pool     // *queryScratch
}

type kdNode struct {
	start, end  int32 // points [start, end)
	left, right int32 // children; left < 0 for a leaf
	maxR        float64
}

// newBagIndex builds the tree over bags (each a list of dim-dimensional
// points). The split is deterministic (widest coordinate, median by
// coordinate then point number), so the tree depends on the data only.
func newBagIndex(bags [][][]float64, dim int) *bagIndex {
	return newBagIndexLeaf(bags, dim, leafSize)
}

// newBagIndexLeaf is newBagIndex with leaves of up to leaf points (the
// tests use tiny leaves, to exercise deep trees on small data).
func newBagIndexLeaf(bags [][][]float64, dim, leaf int) *bagIndex {
	ix := &bagIndex{dim: dim, nbags: len(bags), bags: bags, leaf: int32(max(leaf, 1))}
	var src [][]float64
	var srcBag []int32
	for i, b := range bags {
		for _, x := range b {
			src = append(src, x)
			srcBag = append(srcBag, int32(i))
		}
	}
	perm := make([]int32, len(src))
	for p := range perm {
		perm[p] = int32(p)
	}
	if len(src) > 0 {
		ix.build(src, perm, 0, int32(len(src)))
	}
	ix.pts = make([]float64, 0, len(src)*dim)
	ix.bagOf = make([]int32, len(src))
	for p, o := range perm {
		ix.pts = append(ix.pts, src[o]...)
		ix.bagOf[p] = srcBag[o]
	}
	ix.pool.New = func() any { return &queryScratch{seen: make([]uint32, ix.nbags)} }
	return ix
}

// build appends the node of perm[start:end] and its subtree; it returns the
// node's number.
func (ix *bagIndex) build(src [][]float64, perm []int32, start, end int32) int32 {
	d := ix.dim
	id := int32(len(ix.nodes))
	ix.nodes = append(ix.nodes, kdNode{start: start, end: end, left: -1, right: -1})
	lo := make([]float64, d)
	hi := make([]float64, d)
	copy(lo, src[perm[start]])
	copy(hi, src[perm[start]])
	for _, p := range perm[start+1 : end] {
		for t, v := range src[p] {
			lo[t] = min(lo[t], v)
			hi[t] = max(hi[t], v)
		}
	}
	ix.box = append(append(ix.box, lo...), hi...)
	if end-start <= ix.leaf {
		return id
	}
	split, spread := 0, 0.0
	for t := range lo {
		if s := hi[t] - lo[t]; s > spread {
			split, spread = t, s
		}
	}
	if spread == 0 {
		return id // every point identical: nothing to split on
	}
	less := func(a, b int32) bool {
		va, vb := src[a][split], src[b][split]
		if va != vb {
			return va < vb
		}
		return a < b
	}
	mid := start + (end-start)/2
	selectNth(perm[start:end], int(mid-start), less)
	l := ix.build(src, perm, start, mid)
	r := ix.build(src, perm, mid, end)
	ix.nodes[id].left, ix.nodes[id].right = l, r
	return id
}

// selectNth reorders a so that a[k] is the element of rank k under less (a
// strict total order), with no greater element before it and no smaller one
// after it (Hoare's quickselect, median-of-three pivot). The tree stays
// correct whatever the partition; only its balance depends on this.
func selectNth(a []int32, k int, less func(x, y int32) bool) {
	lo, hi := 0, len(a)-1
	for hi > lo {
		mid := lo + (hi-lo)/2
		if less(a[mid], a[lo]) {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if less(a[hi], a[lo]) {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if less(a[hi], a[mid]) {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for less(a[i], pivot) {
				i++
			}
			for less(pivot, a[j]) {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}

// setRadii records the citation radii and, per node, the largest radius of
// the bags below it (the bound the citer search prunes with).
func (ix *bagIndex) setRadii(radius []float64) {
	ix.radius = radius
	for n := len(ix.nodes) - 1; n >= 0; n-- {
		nd := &ix.nodes[n]
		if nd.left >= 0 {
			nd.maxR = max(ix.nodes[nd.left].maxR, ix.nodes[nd.right].maxR)
			continue
		}
		nd.maxR = math.Inf(-1)
		for _, b := range ix.bagOf[nd.start:nd.end] {
			nd.maxR = max(nd.maxR, radius[b])
		}
	}
}

func (ix *bagIndex) point(p int32) []float64 {
	return ix.pts[int(p)*ix.dim : (int(p)+1)*ix.dim]
}

// boxBound is a lower bound of min over q of ‖q − y‖² for every point y in
// node n, or some value >= bound.
func (ix *bagIndex) boxBound(q [][]float64, n int32, bound float64) float64 {
	d := ix.dim
	lo := ix.box[2*int(n)*d:][:d]
	hi := ix.box[(2*int(n)+1)*d:][:d]
	best := bound
	for _, x := range q {
		s := 0.0
		for t, v := range x {
			// The gap is computed as v − hi or lo − v, the same
			// subtraction (up to sign) as the point distance, so by
			// monotone rounding it never exceeds |v − y_t|.
			var g float64
			switch {
			case v < lo[t]:
				g = lo[t] - v
			case v > hi[t]:
				g = v - hi[t]
			default:
				continue
			}
			if s += g * g; s >= best {
				break
			}
		}
		best = min(best, s)
	}
	return best
}

// pointDist is min over q of ‖q − y‖² for point p, computed as
// minHausdorffBelow computes it.
func (ix *bagIndex) pointDist(q [][]float64, p int32, bound float64) float64 {
	y := ix.point(p)
	best := bound
	for _, x := range q {
		best = min(best, sqDistBelow(x, y, best))
	}
	return best
}

// item is an entry of the best-first search: a node (bag < 0) keyed by its
// lower bound, or a point keyed by its exact distance.
type item struct {
	key float64
	id  int32 // node or point number
	bag int32 // bag of the point; -1 for a node
}

// itemLess orders the search: by key, then nodes before points (a node whose
// bound equals a point's distance may hold a point at that distance from a
// bag of smaller number), then by bag number, the brute-force tie-break.
func itemLess(a, b item) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	if (a.bag < 0) != (b.bag < 0) {
		return a.bag < 0
	}
	if a.bag != b.bag {
		return a.bag < b.bag
	}
	return a.id < b.id
}

// itemHeap is a binary min-heap under itemLess (hand-written: the search
// pushes and pops millions of items during a fit, and container/heap would
// box each one).
type itemHeap []item

func (h *itemHeap) push(it item) {
	*h = append(*h, it)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !itemLess(a[i], a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *itemHeap) pop() item {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(a) {
			break
		}
		c := l
		if r := l + 1; r < len(a) && itemLess(a[r], a[l]) {
			c = r
		}
		if !itemLess(a[c], a[i]) {
			break
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
	*h = a
	return top
}

// queryScratch is the per-query state: the search heaps and an epoch-stamped
// "bag already seen" array, so a query costs no O(m) clearing.
type queryScratch struct {
	heap    itemHeap
	pending bagHeap
	seen    []uint32
	epoch   uint32
	cited   []int32
}

func (s *queryScratch) nextEpoch() uint32 {
	s.epoch++
	if s.epoch == 0 { // wrapped: stale stamps could read as current
		clear(s.seen)
		s.epoch = 1
	}
	return s.epoch
}

// neighbour is a training bag and its distance to the query.
type neighbour struct {
	d   float64
	bag int
}

// bagStream yields the training bags in increasing (distance, bag number)
// order, the order of the brute-force sort.
type bagStream interface {
	next() (neighbour, bool)
}

// minStream is the best-first search under the minimal Hausdorff distance.
type minStream struct {
	ix    *bagIndex
	q     [][]float64
	s     *queryScratch
	epoch uint32
}

// newMinStream starts a search from query bag q; skip (>= 0) is a bag left
// out (the query itself, when computing a training bag's radius).
func (ix *bagIndex) newMinStream(q [][]float64, skip int, s *queryScratch) *minStream {
	st := &minStream{ix: ix, q: q, s: s, epoch: s.nextEpoch()}
	s.heap = s.heap[:0]
	if skip >= 0 {
		s.seen[skip] = st.epoch
	}
	if len(ix.nodes) > 0 {
		s.heap.push(item{key: ix.boxBound(q, 0, math.Inf(1)), id: 0, bag: -1})
	}
	return st
}

// lowerBound bounds the distance of every bag next can still return.
func (st *minStream) lowerBound() float64 {
	if len(st.s.heap) == 0 {
		return math.Inf(1)
	}
	return st.s.heap[0].key
}

func (st *minStream) next() (neighbour, bool) {
	ix, h, seen := st.ix, &st.s.heap, st.s.seen
	for len(*h) > 0 {
		it := h.pop()
		if it.bag >= 0 {
			if seen[it.bag] == st.epoch {
				continue
			}
			seen[it.bag] = st.epoch
			return neighbour{it.key, int(it.bag)}, true
		}
		nd := &ix.nodes[it.id]
		if nd.left < 0 {
			for p := nd.start; p < nd.end; p++ {
				if b := ix.bagOf[p]; seen[b] != st.epoch {
					h.push(item{key: ix.pointDist(st.q, p, math.Inf(1)), id: p, bag: b})
				}
			}
			continue
		}
		for _, c := range [2]int32{nd.left, nd.right} {
			h.push(item{key: ix.boxBound(st.q, c, math.Inf(1)), id: c, bag: -1})
		}
	}
	return neighbour{}, false
}

// bagHeap is a min-heap of neighbours by (distance, bag number).
type bagHeap []neighbour

func nbLess(a, b neighbour) bool {
	if a.d != b.d {
		return a.d < b.d
	}
	return a.bag < b.bag
}

func (h *bagHeap) push(n neighbour) {
	*h = append(*h, n)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !nbLess(a[i], a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *bagHeap) pop() neighbour {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(a) {
			break
		}
		c := l
		if r := l + 1; r < len(a) && nbLess(a[r], a[l]) {
			c = r
		}
		if !nbLess(a[c], a[i]) {
			break
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
	*h = a
	return top
}

// maxStream yields bags in maximal Hausdorff order. The maximal distance is
// at least the minimal one, so it takes bags from a minStream, computes their
// exact maximal distance, and releases the nearest pending bag once the
// minStream's lower bound exceeds its distance: no bag still in the
// minStream can come before it. (At equal values it waits, since a bag of
// smaller number could tie.) The pruning is only as good as the minimal
// distance bounds the maximal one: bags sharing one close instance pair with
// the query are all computed exactly.
type maxStream struct {
	min *minStream
	q   [][]float64
}

func (ix *bagIndex) newMaxStream(q [][]float64, skip int, s *queryScratch) *maxStream {
	s.pending = s.pending[:0]
	return &maxStream{min: ix.newMinStream(q, skip, s), q: q}
}

func (st *maxStream) next() (neighbour, bool) {
	p := &st.min.s.pending
	for len(*p) == 0 || st.min.lowerBound() <= (*p)[0].d {
		n, ok := st.min.next()
		if !ok {
			break
		}
		p.push(neighbour{maxHausdorffBelow(st.q, st.min.ix.bags[n.bag], math.Inf(1)), n.bag})
	}
	if len(*p) == 0 {
		return neighbour{}, false
	}
	return p.pop(), true
}

func (ix *bagIndex) stream(q [][]float64, skip int, maximal bool, s *queryScratch) bagStream {
	if maximal {
		return ix.newMaxStream(q, skip, s)
	}
	return ix.newMinStream(q, skip, s)
}

// citers appends to s.cited the bags i with d(q, i) <= radius_i. The
// search visits the points whose nearest-query-instance distance can be
// within the largest radius below their node; a bag with one point within
// its own radius is within it in minimal Hausdorff distance, and under the
// maximal distance (never smaller) it is a candidate checked exactly.
func (ix *bagIndex) citers(q [][]float64, maximal bool, s *queryScratch) []int32 {
	s.cited = s.cited[:0]
	if len(ix.nodes) == 0 {
		return s.cited
	}
	epoch := s.nextEpoch()
	stack := []int32{0}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nd := &ix.nodes[n]
		// The bound is only needed up to maxR: a value above it prunes.
		if ix.boxBound(q, n, math.Nextafter(nd.maxR, math.Inf(1))) > nd.maxR {
			continue
		}
		if nd.left >= 0 {
			stack = append(stack, nd.right, nd.left)
			continue
		}
		for p := nd.start; p < nd.end; p++ {
			b := ix.bagOf[p]
			if s.seen[b] == epoch {
				continue
			}
			r := ix.radius[b]
			if ix.pointDist(q, p, math.Nextafter(r, math.Inf(1))) > r {
				continue
			}
			s.seen[b] = epoch
			if maximal && maxHausdorffBelow(q, ix.bags[b], math.Nextafter(r, math.Inf(1))) > r {
				continue
			}
			s.cited = append(s.cited, b)
		}
	}
	return s.cited
}

// citeRadii computes, for every training bag, the distance to its c-th
// nearest other training bag (-1 when it has no other bag: it then cites
// nothing, distances being >= 0), by one index search per bag. Bags are
// shared among workers, each writing only its own output slots, so the
// result does not depend on the worker count.
func (ix *bagIndex) citeRadii(ctx context.Context, c int, maximal bool, workers int) ([]float64, error) {
	out := make([]float64, ix.nbags)
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
			s := ix.pool.Get().(*queryScratch)
			defer ix.pool.Put(s)
			for i := range next {
				out[i] = -1
				st := ix.stream(ix.bags[i], i, maximal, s)
				for range c {
					n, ok := st.next()
					if !ok {
						break
					}
					out[i] = n.d
				}
			}
		}()
	}
	var err error
	for i := range ix.nbags {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return out, err
}

package metriclearn

import (
	"cmp"
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
)

// leafSize bounds the points of a tree leaf: smaller leaves prune more
// points but cost more node bounds and heap traffic. 16 is a common choice,
// not tuned here.
const leafSize = 16

// bagIndex is a tree over the projected instances of the training bags,
// each point tagged with its bag: nodes split by 2-means, each with its
// bounding box, its bounding ball and the largest citation radius of the
// bags of its points. It answers the three questions
// citation-kNN asks without scanning every bag:
//
//   - the training bags in increasing minimal Hausdorff distance to a query
//     bag (best-first search over the instances: the minimal Hausdorff
//     distance is the distance of the nearest instance pair, so the first
//     point of a bag to come out of the search gives that bag's distance);
//   - the citers, bags i with d(query, i) <= radius_i, by a search that
//     skips every node whose distance lower bound exceeds the largest radius
//     of the bags below it;
//   - each training bag's citation radius under the minimal distance, by
//     a bounded search (kthMin). Under the maximal distance the radii are
//     still a scan, O(m²) per fit: see kthMax.
//
// Distances are computed from the same float64 values, in the same
// coordinate order, as minHausdorffBelow, and a node's box bound sums
// squared gaps in that order too; floating-point rounding is monotone, so
// that bound never exceeds the computed distance of a point below it (the
// ball bound keeps a margin for its rounding: see nodeBound), and the
// results are bit-identical to the brute-force scan (ties included: see
// itemLess).
//
// The tree is built from the model state at fit and decode time and is not
// serialized, so the model format is unchanged. It is immutable after
// setRadii; queries use per-call scratch from pool.
type bagIndex struct {
	dim   int
	leaf  int32 // most points of a leaf
	nbags int
	pts   []float64 // point p is pts[p*dim : (p+1)*dim], in tree order
	bagOf []int32   // bag of point p
	nodes []kdNode  // preorder: children follow their parent
	box   []float64 // node n: lo = box[2*n*dim:][:dim], hi = box[(2*n+1)*dim:][:dim]
	// center[n*dim:][:dim] is the centroid of node n's points.
	center []float64
	// empty lists the bags without instances, ascending (none in a
	// validated data set; a decoded state is not checked for them).
	empty []int
	// radius[i] is the citation radius of bag i (nil until setRadii).
	radius []float64
	bags   [][][]float64 // the training bags, for kthMax's scan
	pool   sync.Pool     // *queryScratch
}

type kdNode struct {
	start, end  int32 // points [start, end)
	left, right int32 // children; left < 0 for a leaf
	maxR        float64
	r           float64 // ball radius around the node's centroid
}

// newBagIndex builds the tree over bags (each a list of dim-dimensional
// points). The splits are deterministic (2-means from fixed starting
// points, ties by point number), so the tree depends on the data only,
// never on the worker count.
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
		if len(b) == 0 {
			ix.empty = append(ix.empty, i)
		}
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
		// key holds the split projections of the points of a node.
		ix.build(src, perm, make([]float64, len(src)), 0, int32(len(src)))
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

// newBagScan is a bagIndex without a tree, for the maximal Hausdorff
// distance, whose radii are a scan (kthMax) and whose queries scan too
// (citationKNN): building the tree would be wasted.
func newBagScan(bags [][][]float64) *bagIndex {
	ix := &bagIndex{nbags: len(bags), bags: bags}
	ix.pool.New = func() any { return &queryScratch{seen: make([]uint32, ix.nbags)} }
	return ix
}

// build appends the node of perm[start:end] and its subtree; it returns the
// node's number.
func (ix *bagIndex) build(src [][]float64, perm []int32, key []float64, start, end int32) int32 {
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
	// The ball: centroid and largest distance to it.
	c := make([]float64, d)
	for _, p := range perm[start:end] {
		for t, v := range src[p] {
			c[t] += v
		}
	}
	for t := range c {
		c[t] /= float64(end - start)
	}
	r2, far := 0.0, perm[start]
	for _, p := range perm[start:end] {
		if e := sqDist(src[p], c); e > r2 {
			r2, far = e, p
		}
	}
	ix.center = append(ix.center, c...)
	ix.nodes[id].r = math.Sqrt(r2)
	if end-start <= ix.leaf || r2 == 0 {
		return id // small enough, or every point identical
	}
	// Split by 2-means, started from the point farthest from the centroid
	// and the point farthest from that one. On the clustered data of a
	// learned projection (class centroids near the vertices of a simplex,
	// every coordinate separating about one class) a median split on one
	// coordinate or one direction cuts through the clusters, and then no
	// bound prunes anything; 2-means keeps clusters whole, so the box of a
	// node excludes the classes it does not hold.
	ca := slices.Clone(src[far])
	cb, fb := ca, 0.0
	for _, p := range perm[start:end] {
		if e := sqDist(src[p], ca); e > fb {
			cb, fb = src[p], e
		}
	}
	cb = slices.Clone(cb)
	na := 0
	for iter := range 8 {
		na = 0
		moved := false
		for _, p := range perm[start:end] {
			// key < 0: nearer ca; the side is the sign, the
			// fallback below splits at the median of key.
			k := sqDist(src[p], ca) - sqDist(src[p], cb)
			moved = moved || iter == 0 || (k < 0) != (key[p] < 0)
			key[p] = k
			if k < 0 {
				na++
			}
		}
		// Converged (no point changed side) or at the last pass.
		if !moved || iter == 7 || na == 0 || na == int(end-start) {
			break
		}
		clear(ca)
		clear(cb)
		for _, p := range perm[start:end] {
			dst := cb
			if key[p] < 0 {
				dst = ca
			}
			for t, v := range src[p] {
				dst[t] += v
			}
		}
		for t := range ca {
			ca[t] /= float64(na)
			cb[t] /= float64(int(end-start) - na)
		}
	}
	// A lopsided split (an outlier peeled off) would make the tree deep
	// and its build quadratic: keep each side at least a sixteenth.
	n := int(end - start)
	mid := start + int32(min(max(na, n/16, 1), n-max(n/16, 1)))
	less := func(x, y int32) bool {
		if key[x] != key[y] {
			return key[x] < key[y]
		}
		return x < y
	}
	selectNth(perm[start:end], int(mid-start), less)
	l := ix.build(src, perm, key, start, mid)
	r := ix.build(src, perm, key, mid, end)
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

// nodeBound is a lower bound of min over x in q of ‖x − y‖² for every point
// y in node n, or some value >= bound: per query point, the larger of the
// box bound and the ball bound.
func (ix *bagIndex) nodeBound(q [][]float64, n int32, bound float64) float64 {
	d := ix.dim
	lo := ix.box[2*int(n)*d:][:d]
	hi := ix.box[(2*int(n)+1)*d:][:d]
	c := ix.center[int(n)*d:][:d]
	r := ix.nodes[n].r
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
		if s >= best {
			continue
		}
		// Ball: ‖x − y‖ >= ‖x − c‖ − r. The square roots and the
		// difference round, so the bound is lowered by a relative margin
		// (1e-9, far above the ~1e-14 relative error of these sums) to
		// stay below the point distances as computed.
		dc := math.Sqrt(sqDist(x, c))
		if g := dc - r - 1e-9*(dc+r); g > 0 {
			s = max(s, g*g)
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
	heap  itemHeap
	top   []neighbour // kthMax's c nearest so far
	seen  []uint32
	epoch uint32
	cited []int32
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

// minStream is the best-first search under the minimal Hausdorff distance.
type minStream struct {
	ix        *bagIndex
	q         [][]float64
	s         *queryScratch
	epoch     uint32
	nextEmpty int // next entry of ix.empty to yield once the tree is done
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
		s.heap.push(item{key: ix.nodeBound(q, 0, math.Inf(1)), id: 0, bag: -1})
	}
	return st
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
			h.push(item{key: ix.nodeBound(st.q, c, math.Inf(1)), id: c, bag: -1})
		}
	}
	// A bag without instances has no point in the tree; the scan puts it
	// last, at distance +Inf, in bag order.
	for ; st.nextEmpty < len(ix.empty); st.nextEmpty++ {
		if b := ix.empty[st.nextEmpty]; seen[b] != st.epoch {
			seen[b] = st.epoch
			st.nextEmpty++
			return neighbour{math.Inf(1), b}, true
		}
	}
	return neighbour{}, false
}

// citers returns (in s.cited) the bags i with minimal Hausdorff distance
// d(q, i) <= radius_i. The search visits the points whose
// nearest-query-instance distance can be within the largest radius below
// their node; a bag with one point within its own radius is a citer.
func (ix *bagIndex) citers(q [][]float64, s *queryScratch) []int32 {
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
		if ix.nodeBound(q, n, math.Nextafter(nd.maxR, math.Inf(1))) > nd.maxR {
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
	return ix.citeRadiiPrefix(ctx, ix.nbags, c, maximal, workers)
}

// citeRadiiPrefix is citeRadii for the first n bags only (each against all
// bags): the benchmark times a sample of the sizes whose full fit is long.
func (ix *bagIndex) citeRadiiPrefix(ctx context.Context, n, c int, maximal bool, workers int) ([]float64, error) {
	out := make([]float64, n)
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
				if maximal {
					out[i] = ix.kthMax(ix.bags[i], i, c, s)
					continue
				}
				out[i] = ix.kthMin(ix.bags[i], i, c, s)
			}
		}()
	}
	var err error
	for i := range n {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return out, err
}

// kthMax is the c-th smallest maximal Hausdorff distance from q to the
// bags other than skip (-1 without any; the largest when fewer than c), by a
// scan of every bag in bag order, each distance computed with the running
// c-th smallest as early-abandon bound and q's last witness instance first
// (maxHausdorffFrom): the brute force with cheaper abandons, O(m) bag
// distances per bag and O(m²) per fit. The minimal Hausdorff distance bounds the
// maximal one from below, and a search that took bags in that order and
// stopped when the bound reached the c-th value was exact but measured 1.4x
// slower than this scan on MSCV2-shaped data: there a bag's c-th neighbour
// under the maximal distance is at the range of the distances between
// classes (one instance of a class the other bag lacks is enough), so the
// bound stops nothing and the search only adds its cost.
func (ix *bagIndex) kthMax(q [][]float64, skip, c int, s *queryScratch) float64 {
	top := s.top[:0] // ascending, at most c
	first := 0       // q's instance that last made a distance reach the bound
	for b := range ix.nbags {
		if b == skip {
			continue
		}
		bound := math.Inf(1)
		if len(top) == c {
			bound = top[c-1].d
		}
		d, w := maxHausdorffFrom(q, ix.bags[b], bound, first)
		if w >= 0 {
			first = w
		}
		if d >= bound {
			continue
		}
		pos, _ := slices.BinarySearchFunc(top, d, func(e neighbour, d float64) int { return cmp.Compare(e.d, d) })
		if len(top) < c {
			top = append(top, neighbour{})
		}
		copy(top[pos+1:], top[pos:len(top)-1])
		top[pos] = neighbour{d: d}
	}
	s.top = top
	if len(top) == 0 {
		return -1
	}
	return top[len(top)-1].d
}

// kthMin is the c-th smallest minimal Hausdorff distance from q to the
// bags other than skip (-1 without any; the largest when fewer than c): the
// first c values of a minStream, but by a bounded search, which is what a
// fit spends its time on. Only the value matters, not which bags tie at it,
// so nodes are taken nearest bound first until their bound reaches the c-th
// smallest bag distance so far, points are measured with that value as
// early-abandon bound, and no point goes through the heap.
func (ix *bagIndex) kthMin(q [][]float64, skip, c int, s *queryScratch) float64 {
	top := s.top[:0] // per bag its distance, ascending, at most c bags
	bound := math.Inf(1)
	h := &s.heap
	*h = (*h)[:0]
	if len(ix.nodes) > 0 {
		h.push(item{key: ix.nodeBound(q, 0, bound), id: 0, bag: -1})
	}
	for len(*h) > 0 {
		it := h.pop()
		if it.key >= bound {
			break
		}
		nd := &ix.nodes[it.id]
		if nd.left >= 0 {
			for _, ch := range [2]int32{nd.left, nd.right} {
				if lb := ix.nodeBound(q, ch, bound); lb < bound {
					h.push(item{key: lb, id: ch, bag: -1})
				}
			}
			continue
		}
		for p := nd.start; p < nd.end; p++ {
			b := int(ix.bagOf[p])
			if b == skip {
				continue
			}
			d := ix.pointDist(q, p, bound)
			if d >= bound {
				continue
			}
			// The bag may be in top already, at a larger distance.
			at := slices.IndexFunc(top, func(e neighbour) bool { return e.bag == b })
			switch {
			case at >= 0 && top[at].d <= d:
				continue
			case at >= 0:
				top = slices.Delete(top, at, at+1)
			case len(top) == c:
				top = top[:c-1] // the c-th is pushed out
			}
			pos, _ := slices.BinarySearchFunc(top, d, func(e neighbour, d float64) int { return cmp.Compare(e.d, d) })
			top = slices.Insert(top, pos, neighbour{d: d, bag: b})
			if len(top) == c {
				bound = top[c-1].d
			}
		}
	}
	s.top = top
	if len(top) == 0 {
		return -1
	}
	return top[len(top)-1].d
}

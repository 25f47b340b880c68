package mimlca

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/mimlstream/mimlstream/internal/solver/assign"
	"gonum.org/v1/gonum/mat"
)

// Bag is one training bag for the adapted k-means: the rows [Start,
// Start+N) of U and the bag's candidate labels.
type Bag struct {
	Start, N int
	Labels   []int
}

// Result is the outcome of the adapted k-means (Algorithm 1, steps 2-8).
type Result struct {
	// Assigned[j] is the class of row j, or -1 when the row is left out.
	Assigned []int
	// Objective is Σ_j Σ_c H_jc ‖u_j − z_c‖² (eq. 12) at the returned H.
	Objective float64
	// Trace holds the objective after each iteration of the best restart;
	// Algorithm 1 makes it non-increasing (supp. A.4.2).
	Trace []float64
	// Iterations of the best restart.
	Iterations int
	// Deterministic is the final objective of the authors' start (every
	// centroid the mean of the instances of the bags carrying its label),
	// RandomBest the lowest final objective over the random restarts
	// (+Inf without any). Objective is the smaller of the two.
	Deterministic, RandomBest float64
}

// KMeansOptions control the adapted k-means.
type KMeansOptions struct {
	K int
	// Capacity is the number of instances of a bag one candidate label may
	// take: 1 in the paper (eq. 2, "at most one instance of the bag to the
	// category"); larger values replicate each label column of the
	// assignment problem, for data where a label covers several instances.
	// <= 0 means 1.
	Capacity int
	// Cover keeps every label of a bag on at least one of its instances
	// when capacity > 1 (and the bag has as many instances as labels): the
	// union assumption, which eq. 13 holds at capacity 1 (every label gets
	// an instance) and replicated columns lose, since each instance may
	// then take its nearest label and a label none. A label left without
	// instances in every bag of a co-occurring class (cow with grass)
	// leaves its centroid to the few bags where it is nearest.
	Cover    bool
	Iters    int // maximum iterations per restart
	Restarts int // random initializations after the deterministic start (0: that start alone); the lowest objective wins
	Workers  int // <= 0: all cores
}

// AdaptedKMeans solves eq. 12 of Law et al. 2017 by Algorithm 1: starting
// from the authors' deterministic point (each centroid the mean of the
// instances of the bags carrying that label, then the exact assignment),
// and from opt.Restarts random H in Q^V, it alternates the centroids Z = H†U (class means,
// zero for an empty class) with the exact per-bag assignment of eq. 13, a
// rectangular assignment problem between the bag's instances and its
// candidate labels (at most one instance per label and one label per
// instance, p_i = min(n_i, |y_i|) pairs) solved by the Hungarian algorithm.
// It stops when H no longer changes.
//
// One iteration costs O(Σ_i s p_i q_i + p_i² q_i), linear in the number of
// instances. Bags are assigned in parallel; each writes only its own rows,
// and the objective is summed in bag order, so the result depends on the
// seed only, not on the number of workers.
func AdaptedKMeans(ctx context.Context, u *mat.Dense, bags []Bag, opt KMeansOptions, rng *rand.Rand) (Result, error) {
	n, s := u.Dims()
	if opt.K <= 0 {
		return Result{}, fmt.Errorf("mimlca: k=%d", opt.K)
	}
	for i, b := range bags {
		if b.Start < 0 || b.N < 0 || b.Start+b.N > n {
			return Result{}, fmt.Errorf("mimlca: bag %d rows [%d,%d) outside %d rows", i, b.Start, b.Start+b.N, n)
		}
		for _, c := range b.Labels {
			if c < 0 || c >= opt.K {
				return Result{}, fmt.Errorf("mimlca: bag %d label %d outside 0..%d", i, c, opt.K-1)
			}
		}
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	capacity := max(opt.Capacity, 1)
	best := Result{Objective: math.Inf(1), RandomBest: math.Inf(1)}
	z := mat.NewDense(opt.K, s, nil)
	bagCost := make([]float64, len(bags))
	// Restart −1 is the deterministic start, then the random ones; the
	// random draws are those of the random restarts alone, so adding the
	// deterministic start can only lower the kept objective.
	for r := -1; r < opt.Restarts; r++ {
		var h []int
		if r < 0 {
			h = make([]int, n)
			for j := range h {
				h[j] = -1
			}
			labelMeans(u, bags, z)
		} else {
			h = randomAssignment(n, bags, capacity, rng)
			centroids(u, h, z)
		}
		var trace []float64
		iters := 0
		for iters < max(opt.Iters, 1) {
			if err := ctx.Err(); err != nil {
				return Result{}, err
			}
			if iters > 0 {
				centroids(u, h, z)
			}
			changed, err := assignAll(u, z, bags, h, bagCost, capacity, opt.Cover, workers)
			if err != nil {
				return Result{}, err
			}
			iters++
			obj := 0.0
			for _, c := range bagCost {
				obj += c
			}
			trace = append(trace, obj)
			if !changed {
				break
			}
		}
		obj := trace[len(trace)-1]
		if r < 0 {
			best.Deterministic = obj
		} else {
			best.RandomBest = min(best.RandomBest, obj)
		}
		if obj < best.Objective {
			best.Assigned, best.Objective, best.Trace, best.Iterations = h, obj, trace, iters
		}
	}
	return best, nil
}

// labelMeans sets the rows of z to the authors' starting centroids: row c
// is the mean of every instance of every bag carrying label c (zero for a
// label no bag carries).
func labelMeans(u *mat.Dense, bags []Bag, z *mat.Dense) {
	z.Zero()
	k, _ := z.Dims()
	cnt := make([]float64, k)
	for _, b := range bags {
		for _, c := range b.Labels {
			zr := z.RawRowView(c)
			for j := b.Start; j < b.Start+b.N; j++ {
				for t, v := range u.RawRowView(j) {
					zr[t] += v
				}
			}
			cnt[c] += float64(b.N)
		}
	}
	for c := range cnt {
		if cnt[c] > 0 {
			zr := z.RawRowView(c)
			for t := range zr {
				zr[t] /= cnt[c]
			}
		}
	}
}

// randomAssignment draws H uniformly among the maximal matchings of each bag:
// p_i = min(n_i, capacity·|y_i|) random instances paired with random slots
// (labels replicated capacity times).
func randomAssignment(n int, bags []Bag, capacity int, rng *rand.Rand) []int {
	h := make([]int, n)
	for j := range h {
		h[j] = -1
	}
	for _, b := range bags {
		slots := len(b.Labels) * min(capacity, b.N)
		inst := rng.Perm(b.N)
		lab := rng.Perm(slots)
		for t := 0; t < min(b.N, slots); t++ {
			h[b.Start+inst[t]] = b.Labels[lab[t]%len(b.Labels)]
		}
	}
	return h
}

// centroids sets the rows of z to the class means of the assigned rows of u
// (Z = H†U; a class with no row gets the zero vector, as H† has a zero row).
func centroids(u *mat.Dense, h []int, z *mat.Dense) {
	z.Zero()
	k, _ := z.Dims()
	cnt := make([]float64, k)
	for j, c := range h {
		if c < 0 {
			continue
		}
		cnt[c]++
		zr := z.RawRowView(c)
		for t, v := range u.RawRowView(j) {
			zr[t] += v
		}
	}
	for c := range cnt {
		if cnt[c] > 0 {
			zr := z.RawRowView(c)
			for t := range zr {
				zr[t] /= cnt[c]
			}
		}
	}
}

// assignAll solves eq. 13 for every bag, updating h in place, and reports
// whether any assignment changed.
func assignAll(u, z *mat.Dense, bags []Bag, h []int, bagCost []float64, capacity int, cover bool, workers int) (bool, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		changed  bool
		firstErr error
	)
	chunk := (len(bags) + workers - 1) / workers
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, len(bags))
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch, err := assignRange(u, z, bags[lo:hi], h, bagCost[lo:hi], capacity, cover)
			mu.Lock()
			defer mu.Unlock()
			changed = changed || ch
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	return changed, firstErr
}

func assignRange(u, z *mat.Dense, bags []Bag, h []int, bagCost []float64, capacity int, cover bool) (bool, error) {
	changed := false
	var cost []float64
	for i, b := range bags {
		bagCost[i] = 0
		if b.N == 0 || len(b.Labels) == 0 {
			continue
		}
		// Columns: each label replicated capacity times (column t is label
		// t mod |y_i|); a label never needs more copies than instances.
		// The copies of a label are the same distance, computed once and
		// repeated (with capacity 9 that is 9 times fewer distances).
		nl := len(b.Labels)
		cols := nl * min(capacity, b.N)
		cost = cost[:0]
		for j := 0; j < b.N; j++ {
			row := u.RawRowView(b.Start + j)
			first := len(cost)
			for _, c := range b.Labels {
				cost = append(cost, sqDist(row, z.RawRowView(c)))
			}
			for t := nl; t < cols; t++ {
				cost = append(cost, cost[first+t-nl])
			}
		}
		covered := cover && capacity > 1 && b.N >= nl
		if covered && capacity >= b.N {
			labels, total, err := assign.Cover(cost, b.N, nl, cols)
			if err != nil {
				return changed, fmt.Errorf("mimlca: bag at row %d: %w", b.Start, err)
			}
			bagCost[i] = total
			for j, t := range labels {
				if c := b.Labels[t]; h[b.Start+j] != c {
					h[b.Start+j] = c
					changed = true
				}
			}
			continue
		}
		bonus := 0.0
		if covered {
			// Each label's first copy (columns 0..nl-1) made cheaper than
			// any assignment's other costs can make up, so the optimum
			// fills all of them: every label keeps an instance.
			top := 0.0
			for _, v := range cost {
				top = max(top, math.Abs(v))
			}
			bonus = 2*float64(b.N)*top + 1
			for j := range b.N {
				for t := range nl {
					cost[j*cols+t] -= bonus
				}
			}
		}
		if !covered && capacity >= b.N {
			if total, ch, ok := nearestLabels(cost, b, cols, h); ok {
				bagCost[i] = total
				changed = changed || ch
				continue
			}
		}
		rowToCol, total, err := assign.Solve(cost, b.N, cols)
		if err != nil {
			return changed, fmt.Errorf("mimlca: bag at row %d: %w", b.Start, err)
		}
		bagCost[i] = total + bonus*float64(nl)
		for j, col := range rowToCol {
			c := -1
			if col >= 0 {
				c = b.Labels[col%len(b.Labels)]
			}
			if h[b.Start+j] != c {
				h[b.Start+j] = c
				changed = true
			}
		}
	}
	return changed, nil
}

// tieMargin is the relative gap nearestLabels requires between an
// instance's nearest and second-nearest label. The Hungarian algorithm runs
// in floating point: its potentials carry rounding errors of a few ulps of
// the costs per augmentation (relative 1e-15 for the 9 rows of a bag), so
// between two labels closer than that it may return either. A gap a million
// times that leaves it only the nearest label.
const tieMargin = 1e-9

// nearestLabels solves the assignment problem of bag b when no label can run
// short of copies (capacity >= b.N: each of the b.N instances may take any
// label): the optimum is then every instance on its nearest label, which
// the Hungarian algorithm returns too, at O(n·|y|) instead of O(n²·|y|·n).
// cost is the bag's n × cols matrix (the label copies of assignRange). It
// updates h like assignRange and returns the bag's cost (summed in row
// order, as assign.Solve sums it) and whether h changed; ok is false, and
// h untouched, when some instance is within tieMargin of two labels (or a
// cost is not finite): the caller then runs the Hungarian algorithm, whose
// choice between near-equal labels is its own.
func nearestLabels(cost []float64, b Bag, cols int, h []int) (total float64, changed, ok bool) {
	nl := len(b.Labels)
	scale := 0.0
	for _, v := range cost {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, false, false
		}
		scale = max(scale, math.Abs(v))
	}
	margin := tieMargin * scale
	best := make([]int, b.N)
	for j := range b.N {
		row := cost[j*cols:][:nl]
		bj := 0
		for t := 1; t < nl; t++ {
			if row[t] < row[bj] {
				bj = t
			}
		}
		for t := range nl {
			if t != bj && row[t]-row[bj] <= margin {
				return 0, false, false
			}
		}
		best[j] = bj
	}
	for j, t := range best {
		total += cost[j*cols+t]
		if c := b.Labels[t]; h[b.Start+j] != c {
			h[b.Start+j] = c
			changed = true
		}
	}
	return total, changed, true
}

func sqDist(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		t := a[i] - b[i]
		s += t * t
	}
	return s
}

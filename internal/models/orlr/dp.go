package orlr

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Algorithm selects the exact E-step dynamic programme.
type Algorithm string

const (
	// FAS is forward-and-substitution (Pham et al. 2017, Algorithm 2):
	// O(|Y| 2^|Y| n) per bag.
	FAS Algorithm = "fas"
	// Forward is the forward algorithm (Algorithm 1), recomputing the
	// prefix recursion once per left-out instance: O(|Y| 2^|Y| n²) per bag.
	// It is kept as an independent cross-check of FAS.
	Forward Algorithm = "forward"
)

// minUsable is the smallest bag likelihood (after the per-instance scaling
// described in dpWork) for which the linear-domain programmes are trusted.
// Below it the bag is redone in log space.
const minUsable = 1e-250

var errDegenerate = errors.New("degenerate dynamic programme")

// dpWork holds the scratch vectors of the dynamic programme for one bag
// label size, indexed by subsets of the bag label as bit masks: bit j stands
// for the j-th class of the bag label. A subset's strict subsets are
// numerically smaller, so ascending mask order is a valid order for both the
// forward recursion and the forward substitution; it plays the role of the
// paper's cardinality-then-lexicographic order of Proposition 3.
//
// Scaling: the programme works on q_ic = p(y_i=c|x_i) / Σ_{l∈Y} p(y_i=l|x_i),
// the instance probabilities renormalised over the bag label. This rescales
// p(Y_b^i=L) by the constant Π_{j≤i} Σ_{l∈Y} p_jl for every L, which cancels
// in every posterior and is added back in log form to the likelihood. With
// this scaling the vector p(Y^i = ·) sums to one at every step (it is a
// distribution over the unions of the first i labels), so no entry that
// matters underflows however many instances the bag has; a bag whose label
// is (numerically) impossible under the model falls back to log space.
//
// Optional classes: bits set in opt mark bag-label classes that may be
// absent from the union (the unknown class, which every bag allows but no
// bag requires). The accepted unions are then F = {full \ s : s ⊆ opt}, the
// likelihood sums p(Y^n = L) over F and eq. 19 sums over the L in F that
// contain c; with opt = 0, F = {full}, the paper's programme.
type dpWork struct {
	k          int
	opt        int // optional classes, as a mask; set per bag by bagPosteriorsOpt
	cur, next  []float64
	u, v, diag []float64
	// fallbacks counts the bags this scratch redid in log space: a broken
	// or never-taken fast path gives the same posteriors, so only this
	// count tells (tests read it; it belongs to one worker, like the rest).
	fallbacks int
}

func newDPWork(k int) *dpWork {
	n := 1 << k
	return &dpWork{k: k, cur: make([]float64, n), next: make([]float64, n),
		u: make([]float64, n), v: make([]float64, n), diag: make([]float64, n)}
}

// step advances p(Y^i=·) in cur by one instance with label distribution q
// (over the bag label classes): eq. 15,
//
//	p(Y^{i+1}=L) = Σ_{c∈L} q_c [p(Y^i=L) + p(Y^i=L\c)].
//
// With cur[∅]=1 (the empty prefix) it also yields eq. 14 for the first
// instance.
func (d *dpWork) step(q []float64) {
	full := 1 << d.k
	cur, next := d.cur, d.next
	next[0] = 0
	for m := 1; m < full; m++ {
		s := 0.0
		for r := m; r != 0; r &= r - 1 {
			c := bits.TrailingZeros(uint(r))
			s += q[c] * (cur[m] + cur[m&^(1<<c)])
		}
		next[m] = s
	}
	d.cur, d.next = next, cur
}

// run computes p(Y^n=·) over the instances q (skipping index skip, -1 for
// none) into d.cur.
func (d *dpWork) run(q [][]float64, skip int) {
	clear(d.cur)
	d.cur[0] = 1
	for i, qi := range q {
		if i != skip {
			d.step(qi)
		}
	}
}

// posteriors fills post[i][j] = p(y_i = Y_j | Y, X) for one bag and returns
// log p(Y|X) up to the per-instance scaling (see dpWork). q[i] are the
// scaled label probabilities of instance i over the k bag classes and lq
// their logarithms (kept separately: a q that underflowed to 0 still has a
// finite log for the log-space fallback).
func (d *dpWork) posteriors(alg Algorithm, q, lq, post [][]float64) (float64, error) {
	var (
		ll  float64
		err error
	)
	switch alg {
	case FAS:
		ll, err = d.fas(q, post)
	case Forward:
		ll, err = d.forward(q, post)
	default:
		return 0, fmt.Errorf("unknown E-step algorithm %q", alg)
	}
	if errors.Is(err, errDegenerate) {
		d.fallbacks++
		return d.logForward(lq, post)
	}
	return ll, err
}

// accepted calls f for every accepted final union L (see dpWork).
func (d *dpWork) accepted(f func(L int)) {
	full := 1<<d.k - 1
	for s := d.opt; ; s = (s - 1) & d.opt {
		f(full &^ s)
		if s == 0 {
			return
		}
	}
}

// mass returns Σ_{L∈F} p[L].
func (d *dpWork) mass(p []float64) float64 {
	t := 0.0
	d.accepted(func(L int) { t += p[L] })
	return t
}

// fas is Algorithm 2: one forward pass for u = p(Y^n=·), then for every
// instance i solve u = A v (Proposition 3) for v = p(Y^{\i}=·) by forward
// substitution, then eq. 19 for the posteriors.
func (d *dpWork) fas(q, post [][]float64) (float64, error) {
	full := 1<<d.k - 1
	d.run(q, -1)
	copy(d.u, d.cur)
	u, v, diag := d.u, d.v, d.diag
	like := d.mass(u)
	if !(like > minUsable) {
		return 0, errDegenerate
	}
	n := len(q)
	for i, qi := range q {
		// Row m of A: A(m,m) = Σ_{c∈m} q_c and A(m, m\c) = q_c.
		diag[0] = 0
		for m := 1; m <= full; m++ {
			diag[m] = diag[m&(m-1)] + qi[bits.TrailingZeros(uint(m))]
		}
		// v[∅] = p(no other instance) = 1 iff the bag has one instance.
		v[0] = 0
		if n == 1 {
			v[0] = 1
		}
		for m := 1; m <= full; m++ {
			s := u[m]
			for r := m; r != 0; r &= r - 1 {
				c := bits.TrailingZeros(uint(r))
				s -= qi[c] * v[m&^(1<<c)]
			}
			if diag[m] <= 0 {
				return 0, errDegenerate
			}
			// Rounding can leave a tiny negative where the exact value is 0.
			v[m] = max(s/diag[m], 0)
		}
		if err := d.finish(qi, v, post[i]); err != nil {
			return 0, err
		}
	}
	return math.Log(like), nil
}

// forward is Algorithm 1: for every instance, rerun the recursion over the
// other instances, then apply eq. 19.
func (d *dpWork) forward(q, post [][]float64) (float64, error) {
	d.run(q, -1)
	ll := d.mass(d.cur)
	if !(ll > minUsable) {
		return 0, errDegenerate
	}
	for i := range q {
		d.run(q, i)
		if err := d.finish(q[i], d.cur, post[i]); err != nil {
			return 0, err
		}
	}
	return math.Log(ll), nil
}

// finish applies eq. 19, p(y_i=c, Y) = q_c [p(Y^{\i}=Y) + p(Y^{\i}=Y\c)]
// summed over the accepted unions Y that contain c, and normalises over c
// (eq. 11).
func (d *dpWork) finish(qi, rest, out []float64) error {
	s := 0.0
	for c := range out {
		bit := 1 << c
		t := 0.0
		d.accepted(func(L int) {
			if L&bit != 0 {
				t += rest[L] + rest[L&^bit]
			}
		})
		out[c] = qi[c] * t
		s += out[c]
	}
	if !(s > 0) || math.IsInf(s, 0) {
		return errDegenerate
	}
	for c := range out {
		out[c] /= s
	}
	return nil
}

// logForward is the forward algorithm in log space, the fallback for bags
// whose label the model finds (numerically) impossible. It is O(n²) but such
// bags are rare, and it never underflows.
func (d *dpWork) logForward(lq, post [][]float64) (float64, error) {
	full := 1<<d.k - 1
	cur := make([]float64, full+1)
	next := make([]float64, full+1)
	terms := make([]float64, 0, 2*d.k)
	run := func(skip int) {
		for m := range cur {
			cur[m] = math.Inf(-1)
		}
		cur[0] = 0
		for i, li := range lq {
			if i == skip {
				continue
			}
			next[0] = math.Inf(-1)
			for m := 1; m <= full; m++ {
				terms = terms[:0]
				for r := m; r != 0; r &= r - 1 {
					c := bits.TrailingZeros(uint(r))
					terms = append(terms, li[c]+cur[m], li[c]+cur[m&^(1<<c)])
				}
				next[m] = logSumExp(terms)
			}
			cur, next = next, cur
		}
	}
	var acc []float64
	run(-1)
	d.accepted(func(L int) { acc = append(acc, cur[L]) })
	ll := logSumExp(acc)
	if math.IsInf(ll, -1) || math.IsNaN(ll) {
		return 0, fmt.Errorf("bag label has zero probability under the model")
	}
	for i := range lq {
		run(i)
		out := post[i]
		for c := range out {
			bit := 1 << c
			acc = acc[:0]
			d.accepted(func(L int) {
				if L&bit != 0 {
					acc = append(acc, logAddExp(cur[L], cur[L&^bit]))
				}
			})
			out[c] = lq[i][c] + logSumExp(acc)
		}
		lse := logSumExp(out)
		for c := range out {
			out[c] = math.Exp(out[c] - lse)
		}
	}
	return ll, nil
}

func logAddExp(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(a, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

func logSumExp(z []float64) float64 {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = max(mx, v)
	}
	if math.IsInf(mx, -1) {
		return mx
	}
	s := 0.0
	for _, v := range z {
		s += math.Exp(v - mx)
	}
	return mx + math.Log(s)
}

// bagScratch holds per-bag buffers reused across bags by one worker.
type bagScratch struct {
	work  map[int]*dpWork
	q, lq [][]float64
}

func newBagScratch() *bagScratch { return &bagScratch{work: make(map[int]*dpWork)} }

func (s *bagScratch) dp(k int) *dpWork {
	d, ok := s.work[k]
	if !ok {
		d = newDPWork(k)
		s.work[k] = d
	}
	return d
}

// bagPosteriorsOpt runs the E-step for one bag given the logits of its
// instances (n × C) and its label set: post[i][j] = p(y_i = labels[j] | Y, X),
// where the classes labels[j] with bit j set in opt may be absent from the
// union of the instance labels (the unknown class). It returns
// log p(∪y ∩ R = R, ∪y ⊆ labels | X) with R the required classes (with
// opt = 0, log p(Y | X, w) of eq. 5), and the posteriors given that event.
func bagPosteriorsOpt(s *bagScratch, alg Algorithm, logits [][]float64, labels []int, opt int, post [][]float64) (float64, error) {
	n, k := len(logits), len(labels)
	if k == 0 {
		return 0, errors.New("empty bag label")
	}
	if opt>>k != 0 {
		return 0, fmt.Errorf("optional-class mask %b outside %d classes", opt, k)
	}
	for len(s.q) < n {
		s.q = append(s.q, nil)
		s.lq = append(s.lq, nil)
	}
	ll := 0.0
	for i, z := range logits {
		if cap(s.q[i]) < k {
			s.q[i] = make([]float64, k)
			s.lq[i] = make([]float64, k)
		}
		q, lq := s.q[i][:k], s.lq[i][:k]
		s.q[i], s.lq[i] = q, lq
		for j, c := range labels {
			lq[j] = z[c]
		}
		lseY := logSumExp(lq)
		ll += lseY - logSumExp(z)
		for j := range lq {
			lq[j] -= lseY
			q[j] = math.Exp(lq[j])
		}
	}
	d := s.dp(k)
	d.opt = opt
	l, err := d.posteriors(alg, s.q[:n], s.lq[:n], post)
	if err != nil {
		return 0, err
	}
	return ll + l, nil
}

package symil

import (
	"math"
	"math/rand/v2"
)

// problem is one binary SyMIL training problem: bags of instances given by
// local indices 0..N−1 into rows of a shared feature matrix (linear) or a
// shared Gram matrix (kernel), so the inner cross-validation folds reuse them.
type problem struct {
	gid    []int // gid[l] is the global row of local instance l
	start  []int // bag i holds local instances start[i] .. start[i+1]−1
	pos    []bool
	nPos   int
	c, lam float64
}

func newProblem(bags [][]int, pos []bool, c, lam float64) *problem {
	p := &problem{start: make([]int, 1, len(bags)+1), pos: pos, c: c, lam: lam}
	for i, b := range bags {
		p.gid = append(p.gid, b...)
		p.start = append(p.start, len(p.gid))
		if pos[i] {
			p.nPos++
		}
	}
	return p
}

func (p *problem) n() int    { return len(p.pos) }
func (p *problem) nNeg() int { return p.n() - p.nPos }

// weight is n/n⁺ for a positive bag and n/n⁻ for a negative one: the class
// balancing of constraints 1 and 2 (eq. 3).
func (p *problem) weight(i int) float64 {
	if p.pos[i] {
		return float64(p.n()) / float64(p.nPos)
	}
	return float64(p.n()) / float64(p.nNeg())
}

// latent holds, per bag, the local index of its highest (hp) and lowest (hm)
// scoring instance.
type latent struct{ hp, hm []int }

func (l latent) equal(o latent) bool {
	for i := range l.hp {
		if l.hp[i] != o.hp[i] || l.hm[i] != o.hm[i] {
			return false
		}
	}
	return true
}

// extremes returns the argmax and argmin of the scores of bag i (s indexed
// by problem-local instance), the first index on ties (spec pitfall 13).
func (p *problem) extremes(s []float64, i int) (hp, hm int) {
	a, b := argMaxMin(s[p.start[i]:p.start[i+1]])
	return p.start[i] + a, p.start[i] + b
}

func argMaxMin(s []float64) (hi, lo int) {
	for l := 1; l < len(s); l++ {
		if s[l] > s[hi] {
			hi = l
		}
		if s[l] < s[lo] {
			lo = l
		}
	}
	return hi, lo
}

func (p *problem) infer(s []float64) latent {
	l := latent{hp: make([]int, p.n()), hm: make([]int, p.n())}
	for i := range p.n() {
		l.hp[i], l.hm[i] = p.extremes(s, i)
	}
	return l
}

// randomLatent draws h⁺ and h⁻ of every bag uniformly (Alg. 1, line 1).
func (p *problem) randomLatent(rng *rand.Rand) latent {
	l := latent{hp: make([]int, p.n()), hm: make([]int, p.n())}
	for i := range p.n() {
		m := p.start[i+1] - p.start[i]
		l.hp[i] = p.start[i] + rng.IntN(m)
		l.hm[i] = p.start[i] + rng.IntN(m)
	}
	return l
}

// piece is the affine piece of the convex part vex_i of bag i active at the
// current w (the Appendix B D+E or F+G case analysis):
// vex_i(w) = cp·⟨w,x_hp⟩ + cm·⟨w,x_hm⟩ + c0 near w, so g_vex = cp·x_hp + cm·x_hm.
type piece struct {
	hp, hm     int
	cp, cm, c0 float64
}

func (p *problem) piece(s []float64, i int) piece {
	return p.pieceBag(s[p.start[i]:p.start[i+1]], i)
}

// pieceBag is piece given only the scores of bag i's own instances.
func (p *problem) pieceBag(bs []float64, i int) piece {
	a, b := argMaxMin(bs)
	M, m := bs[a], bs[b]
	hp, hm := p.start[i]+a, p.start[i]+b
	pc := piece{hp: hp, hm: hm}
	w, lam := p.weight(i), p.lam
	if p.pos[i] {
		// (n/n⁺) max(0, M − 1) + λ max(1 − m, M)
		if M-1 > 0 {
			pc.cp += w
			pc.c0 -= w
		}
		if 1-m > M {
			pc.cm -= lam
			pc.c0 += lam
		} else {
			pc.cp += lam
		}
		return pc
	}
	// (n/n⁻) max(0, −m − 1) + λ max(1 + M, −m)
	if -m-1 > 0 {
		pc.cm -= w
		pc.c0 -= w
	}
	if 1+M > -m {
		pc.cp += lam
		pc.c0 += lam
	} else {
		pc.cm -= lam
	}
	return pc
}

// cave returns the frozen concave-part gradient of bag i as one instance
// and its coefficient, g_cave = coef·x_idx (eq. 13 with the sign of spec
// pitfall 4: negative for negative bags), and κ_i, the constant of the
// tangent bound that keeps the convexified per-bag loss non-negative.
func (p *problem) cave(ht latent, i int) (idx int, coef, kappa float64) {
	w := p.weight(i)
	if p.pos[i] {
		return ht.hp[i], w + p.lam, w
	}
	return ht.hm[i], -(w + p.lam), w
}

// loss is the data term of bag i in eq. 3, without the C/n factor.
func (p *problem) loss(s []float64, i int) float64 {
	hp, hm := p.extremes(s, i)
	M, m := s[hp], s[hm]
	if p.pos[i] {
		return p.weight(i)*math.Max(0, 1-M) + p.lam*math.Max(0, 1-(M+m))
	}
	return p.weight(i)*math.Max(0, 1+m) + p.lam*math.Max(0, 1+M+m)
}

// objective is P(w) of eq. 3 given ‖w‖² and the instance scores.
func (p *problem) objective(normSq float64, s []float64) float64 {
	sum := 0.0
	for i := range p.n() {
		sum += p.loss(s, i)
	}
	return 0.5*normSq + p.c/float64(p.n())*sum
}

// accuracy is the fraction of bags whose sign(M + m) matches the label.
func (p *problem) accuracy(s []float64) float64 {
	ok := 0
	for i := range p.n() {
		hp, hm := p.extremes(s, i)
		if (s[hp]+s[hm] >= 0) == p.pos[i] {
			ok++
		}
	}
	return float64(ok) / float64(p.n())
}

// Package qp solves the small quadratic program of the one-slack
// cutting-plane step of SyMIL (Durand et al. 2018, Alg. 3, line 4):
//
//	maximise  αᵀc − ½ αᵀHα   subject to  α ≥ 0,  1ᵀα ≤ C,
//
// with H symmetric positive semi-definite (a Gram matrix of cutting planes).
// The problem has at most a few hundred variables, so it is solved to KKT
// precision by sequential minimal optimisation over the simplex obtained by
// adding a slack variable α_T = C − 1ᵀα (c_T = 0, H_T· = 0) to find the
// active set cheaply, then finished exactly by a primal active-set method
// that handles singular H (Gram matrices of more planes than dimensions).
// Result.Gap reports the KKT violation left, which tests check is at
// rounding level.
package qp

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// ErrInput reports a malformed problem (dimension mismatch, non-finite data).
var ErrInput = errors.New("qp: invalid problem")

// Result is the solution of a problem.
type Result struct {
	Alpha []float64
	// Objective is αᵀc − ½αᵀHα at Alpha.
	Objective float64
	// Gap is the largest KKT violation left, in units of c: for the optimum
	// it is zero (every variable at its bound or at the common multiplier).
	Gap        float64
	Iterations int
}

// Solver holds settings; the zero value is usable.
type Solver struct {
	// Tol is the KKT tolerance, relative to max(1, max|c|); default 1e-10.
	Tol float64
	// MaxIter bounds the SMO iterations that find the active set before
	// the exact active-set phase; default 20000.
	MaxIter int
}

// Solve maximises cᵀα − ½αᵀHα over {α ≥ 0, 1ᵀα ≤ bound}. h is row-major
// T×T. warm, when non-nil and of length T, is a starting point; it is
// projected onto the feasible set first.
func (s Solver) Solve(c []float64, h []float64, bound float64, warm []float64) (Result, error) {
	t := len(c)
	if len(h) != t*t {
		return Result{}, fmt.Errorf("%w: H has %d entries, want %d", ErrInput, len(h), t*t)
	}
	if !(bound > 0) || math.IsInf(bound, 0) {
		return Result{}, fmt.Errorf("%w: bound %v must be positive and finite", ErrInput, bound)
	}
	for _, v := range c {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Result{}, fmt.Errorf("%w: non-finite c", ErrInput)
		}
	}
	for _, v := range h {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Result{}, fmt.Errorf("%w: non-finite H", ErrInput)
		}
	}
	tol := s.Tol
	if tol <= 0 {
		tol = 1e-10
	}
	maxIter := s.MaxIter
	if maxIter <= 0 {
		maxIter = 20000
	}
	scale := 1.0
	for _, v := range c {
		scale = math.Max(scale, math.Abs(v))
	}
	tol *= scale

	// Variables 0..t-1 are α, variable t is the slack (c = 0, H row = 0).
	n := t + 1
	a := make([]float64, n)
	if len(warm) == t {
		sum := 0.0
		for i, v := range warm {
			a[i] = math.Max(0, v)
			sum += a[i]
		}
		if sum > bound {
			for i := range t {
				a[i] *= bound / sum
			}
			sum = bound
		}
		a[t] = bound - sum
	} else {
		a[t] = bound
	}
	hij := func(i, j int) float64 {
		if i == t || j == t {
			return 0
		}
		return h[i*t+j]
	}
	// g is the gradient of the maximised objective: c − Hα.
	g := make([]float64, n)
	for i := range t {
		g[i] = c[i]
		for j := range t {
			g[i] -= h[i*t+j] * a[j]
		}
	}
	iter := 0
	for ; iter < maxIter; iter++ {
		// Maximal violating pair: up has the steepest ascent, down the
		// steepest descent among variables holding mass. (A second-order
		// selection was tried and stalls on flat, rank-deficient faces.)
		up, down := 0, -1
		for i := 1; i < n; i++ {
			if g[i] > g[up] {
				up = i
			}
		}
		for i := range n {
			if a[i] > 0 && (down < 0 || g[i] < g[down]) {
				down = i
			}
		}
		if down < 0 || up == down || g[up]-g[down] <= tol {
			break
		}
		// Move δ of mass from down to up; the objective gains
		// δ(g_up − g_down) − ½δ²·curv.
		curv := hij(up, up) + hij(down, down) - 2*hij(up, down)
		delta := a[down]
		if curv > 0 {
			delta = math.Min(delta, (g[up]-g[down])/curv)
		}
		a[up] += delta
		a[down] -= delta
		if a[down] < 0 {
			a[down] = 0
		}
		for i := range t {
			g[i] -= delta * (hij(i, up) - hij(i, down))
		}
	}
	alpha := a[:t:t]
	// SMO stops at the KKT tolerance when it can; only when it ran out of
	// iterations (flat faces) is the O(T³)-per-step active-set phase needed.
	if _, gap := evaluate(c, h, bound, alpha); gap > tol {
		activeSet(c, h, bound, a, tol, 10*n+100)
	}
	obj, gap := evaluate(c, h, bound, alpha)
	return Result{Alpha: alpha, Objective: obj, Gap: gap / scale, Iterations: iter}, nil
}

// activeSet finishes the optimisation exactly with a primal active-set
// method on the simplex form (variables α₀..α_{T−1} and the slack α_T, all ≥ 0,
// summing to bound), started from the SMO point a. On the free set F it takes
// the Newton step of the equality-constrained problem; where the reduced
// Hessian is singular and the gradient has a component in its null space, the
// objective is linear along that direction, so it moves along it to the
// boundary instead. A blocked step drops the blocking variable from F; a zero
// step adds the variable with the most negative multiplier. SMO alone
// crawls on such flat faces, which Gram matrices of many cutting planes in a
// low-dimensional feature space always have.
func activeSet(c, h []float64, bound float64, a []float64, tol float64, maxIter int) {
	t := len(c)
	n := t + 1
	hij := func(i, j int) float64 {
		if i == t || j == t {
			return 0
		}
		return h[i*t+j]
	}
	// grad is the gradient of the minimised ½αᵀHα − cᵀα.
	grad := func() []float64 {
		g := make([]float64, n)
		for i := range t {
			g[i] = -c[i]
			for j := range t {
				g[i] += h[i*t+j] * a[j]
			}
		}
		return g
	}
	free := make([]bool, n)
	for i := range n {
		free[i] = a[i] > 0
	}
	for range maxIter {
		g := grad()
		var F []int
		for i := range n {
			if free[i] {
				F = append(F, i)
			}
		}
		k := len(F) - 1
		p := make([]float64, n)
		ray := false
		if k > 0 {
			// Basis of {p_F : Σ p_F = 0}: z_j = e_{F_j} − e_{F_k}.
			R := mat.NewSymDense(k, nil)
			r := make([]float64, k)
			last := F[k]
			for x := range k {
				r[x] = g[F[x]] - g[last]
				for y := x; y < k; y++ {
					R.SetSym(x, y, hij(F[x], F[y])-hij(F[x], last)-hij(last, F[y])+hij(last, last))
				}
			}
			var eig mat.EigenSym
			if !eig.Factorize(R, true) {
				return
			}
			vals := eig.Values(nil)
			var vecs mat.Dense
			eig.VectorsTo(&vecs)
			top := 0.0
			for _, v := range vals {
				top = math.Max(top, math.Abs(v))
			}
			flat := 1e-10 * math.Max(top, 1)
			q := make([]float64, k)
			for j, lam := range vals {
				if lam > flat {
					continue
				}
				u := 0.0
				for x := range k {
					u += vecs.At(x, j) * r[x]
				}
				if math.Abs(u) > tol {
					ray = true
					for x := range k {
						q[x] -= u * vecs.At(x, j)
					}
				}
			}
			if !ray {
				for j, lam := range vals {
					if lam <= flat {
						continue
					}
					u := 0.0
					for x := range k {
						u += vecs.At(x, j) * r[x]
					}
					for x := range k {
						q[x] -= u / lam * vecs.At(x, j)
					}
				}
			}
			for x := range k {
				p[F[x]] += q[x]
				p[last] -= q[x]
			}
		}
		moved := false
		for _, i := range F {
			if math.Abs(p[i]) > 1e-15*math.Max(1, bound) {
				moved = true
				break
			}
		}
		if moved {
			step := 1.0
			if ray {
				step = math.Inf(1)
			}
			block := -1
			for _, i := range F {
				if p[i] < 0 {
					if s := a[i] / -p[i]; s < step {
						step, block = s, i
					}
				}
			}
			if math.IsInf(step, 1) {
				return // cannot happen on a bounded simplex; stop rather than diverge
			}
			for _, i := range F {
				a[i] += step * p[i]
				if a[i] < 0 {
					a[i] = 0
				}
			}
			if block >= 0 {
				a[block] = 0
				free[block] = false
			}
			continue
		}
		// Stationary on F: the multiplier of the sum constraint is −g_F;
		// a variable outside F with g_i < g_F would lower the objective.
		gF := 0.0
		for _, i := range F {
			gF += g[i]
		}
		gF /= float64(len(F))
		enter, worst := -1, -tol
		for i := range n {
			if !free[i] && g[i]-gF < worst {
				enter, worst = i, g[i]-gF
			}
		}
		if enter < 0 {
			return
		}
		free[enter] = true
	}
}

// evaluate returns the objective at alpha and its KKT gap: the largest
// gradient component minus the multiplier of the active variables (or of the
// sum constraint), zero at the optimum.
func evaluate(c, h []float64, bound float64, alpha []float64) (obj, gap float64) {
	t := len(c)
	g := make([]float64, t)
	sum := 0.0
	for i := range t {
		g[i] = c[i]
		for j := range t {
			g[i] -= h[i*t+j] * alpha[j]
		}
		obj += alpha[i] * (c[i] - 0.5*(c[i]-g[i]))
		sum += alpha[i]
	}
	// Multiplier ν of the sum constraint: 0 when it is slack, else the
	// smallest gradient over the support; KKT asks g_i ≤ ν for all i and
	// g_i = ν on the support.
	hi, lo := 0.0, math.Inf(1)
	for i := range t {
		hi = math.Max(hi, g[i])
		if alpha[i] > 0 {
			lo = math.Min(lo, g[i])
		}
	}
	if sum < bound*(1-1e-12) {
		lo = math.Min(lo, 0)
	}
	if math.IsInf(lo, 1) {
		lo = 0
	}
	return obj, math.Max(0, hi-lo)
}

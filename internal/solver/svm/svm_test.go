package svm

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func randProblem(seed uint64, n, d int, shift float64) ([][]float64, []bool) {
	rng := rand.New(rand.NewPCG(seed, 1))
	X := make([][]float64, n)
	y := make([]bool, n)
	for i := range X {
		y[i] = i%2 == 0
		X[i] = make([]float64, d)
		for j := range X[i] {
			X[i][j] = rng.NormFloat64()
			if y[i] {
				X[i][j] += shift
			}
		}
	}
	return X, y
}

// duplicateHalf makes the second half of the examples copies of the first
// (points and labels): ties in every selection.
func duplicateHalf(X [][]float64, y []bool) {
	n := len(X)
	for i := n / 2; i < n; i++ {
		X[i], y[i] = X[i-n/2], y[i-n/2]
	}
}

// makeIndefinite overwrites g with a symmetric matrix with negative
// eigenvalues.
func makeIndefinite(g *Gram) {
	for i := range g.n {
		for j := range g.n {
			g.k[i*g.n+j] = math.Sin(float64(i*j+1)) * math.Cos(float64(i+j))
		}
	}
}

// positives counts the positive labels.
func positives(y []bool) int {
	n := 0
	for _, v := range y {
		if v {
			n++
		}
	}
	return n
}

// bruteForceQP solves the SVM dual exactly by enumerating, for every
// variable, whether it sits at 0, at C or strictly inside, solving the
// equality-constrained KKT system of the free ones, and keeping the best
// feasible point. With a strictly positive definite kernel the optimum is
// unique, and it is one of the enumerated points. It returns the alphas, the
// bias (the multiplier of yᵀa = 0) and whether the bias is determined (some
// variable is free).
func bruteForceQP(t *testing.T, g *Gram, y []bool, C []float64) ([]float64, float64, bool) {
	t.Helper()
	n := g.Len()
	ys := make([]float64, n)
	for i := range y {
		ys[i] = sign(y[i])
	}
	q := func(i, j int) float64 { return ys[i] * ys[j] * g.At(i, j) }
	best, bestObj, bestBias, bestFree := []float64(nil), math.Inf(1), 0.0, false
	state := make([]int, n) // 0: at 0, 1: at C, 2: free
	for {
		var free, atC []int
		for i, s := range state {
			switch s {
			case 1:
				atC = append(atC, i)
			case 2:
				free = append(free, i)
			}
		}
		a := make([]float64, n)
		for _, i := range atC {
			a[i] = C[i]
		}
		ok, bias := true, 0.0
		if len(free) == 0 {
			var s float64
			for _, i := range atC {
				s += ys[i] * C[i]
			}
			ok = math.Abs(s) < 1e-12
		} else {
			m := len(free)
			A := mat.NewDense(m+1, m+1, nil)
			rhs := mat.NewVecDense(m+1, nil)
			var yc float64
			for _, i := range atC {
				yc += ys[i] * C[i]
			}
			for r, i := range free {
				lin := 1.0
				for _, j := range atC {
					lin -= q(i, j) * C[j]
				}
				rhs.SetVec(r, lin)
				for c, j := range free {
					A.Set(r, c, q(i, j))
				}
				A.Set(r, m, ys[i])
				A.Set(m, r, ys[i])
			}
			rhs.SetVec(m, -yc)
			var sol mat.VecDense
			if err := sol.SolveVec(A, rhs); err != nil {
				ok = false
			} else {
				for r, i := range free {
					v := sol.AtVec(r)
					if v <= 0 || v >= C[i] {
						ok = false
					}
					a[i] = v
				}
				// Stationarity: Q_F a − 1 + μ y_F = 0, and f(x) = Σ a y K + b
				// gives y_i f(x_i) = 1 on free variables, so b = μ.
				bias = sol.AtVec(m)
			}
		}
		if ok {
			obj := Solution{Alpha: a}.Objective(g, y)
			if obj < bestObj {
				best, bestObj, bestBias, bestFree = a, obj, bias, len(free) > 0
			}
		}
		// Next state in base 3.
		k := 0
		for k < n && state[k] == 2 {
			state[k] = 0
			k++
		}
		if k == n {
			break
		}
		state[k]++
	}
	if best == nil {
		t.Fatal("brute force found no feasible point")
	}
	return best, bestBias, bestFree
}

func TestSolveMatchesBruteForceQP(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		seed     uint64
		n, d     int
		C, gamma float64
		shift    float64
	}{
		{"overlapping small C", 1, 7, 2, 0.5, 0.5, 0.5},
		{"overlapping large C", 2, 7, 2, 100, 0.5, 0.5},
		{"separable", 3, 6, 3, 10, 0.3, 3},
		{"wide kernel", 4, 7, 2, 5, 0.05, 1},
		{"narrow kernel", 5, 6, 2, 1, 5, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			X, y := randProblem(tc.seed, tc.n, tc.d, tc.shift)
			g := RBFGram(X, tc.gamma)
			want, wantBias, biasKnown := bruteForceQP(t, g, y, uniform(tc.n, tc.C))
			got, err := Solve(ctx, g, y, Params{C: tc.C, Tol: 1e-10})
			if err != nil {
				t.Fatal(err)
			}
			if !got.Converged {
				t.Fatal("not converged")
			}
			wantObj := Solution{Alpha: want}.Objective(g, y)
			if d := got.Objective(g, y) - wantObj; math.Abs(d) > 1e-9*max(1, math.Abs(wantObj)) {
				t.Errorf("objective %v, brute force %v", got.Objective(g, y), wantObj)
			}
			for i := range want {
				if math.Abs(got.Alpha[i]-want[i]) > 1e-6*max(1, tc.C) {
					t.Errorf("alpha[%d] = %v, brute force %v", i, got.Alpha[i], want[i])
				}
			}
			if !biasKnown {
				return
			}
			m := got.model(X, y, tc.gamma)
			ref := Solution{Alpha: want, Bias: wantBias}.model(X, y, tc.gamma)
			probe, _ := randProblem(tc.seed+100, 10, tc.d, 0)
			for _, x := range append(probe, X...) {
				if a, b := m.Decision(x), ref.Decision(x); math.Abs(a-b) > 1e-6 {
					t.Errorf("decision %v, brute force %v", a, b)
				}
			}
		})
	}
}

func uniform(n int, c float64) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = c
	}
	return b
}

// TestSolveBoundedMatchesBruteForceQP: with a box of its own per example
// (class-balanced and arbitrary weights), SMO reaches the exact optimum.
// It catches a clipping step that uses one example's bound for the other
// (the C_i ≠ C_j cases of the two-variable update).
func TestSolveBoundedMatchesBruteForceQP(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 8; seed++ {
		X, y := randProblem(seed, 7, 2, 0.5+0.2*float64(seed%3))
		g := RBFGram(X, 0.5)
		r := rand.New(rand.NewPCG(seed, 99))
		bound := make([]float64, len(y))
		for i := range bound {
			bound[i] = 0.1 + 5*r.Float64()
		}
		want, _, _ := bruteForceQP(t, g, y, bound)
		got, err := SolveBounded(ctx, g, y, bound, Params{Tol: 1e-10})
		if err != nil {
			t.Fatal(err)
		}
		wantObj := Solution{Alpha: want}.Objective(g, y)
		if d := got.Objective(g, y) - wantObj; math.Abs(d) > 1e-9*max(1, math.Abs(wantObj)) {
			t.Errorf("seed %d: objective %v, brute force %v", seed, got.Objective(g, y), wantObj)
		}
		for i := range want {
			if got.Alpha[i] < -1e-12 || got.Alpha[i] > bound[i]+1e-12 {
				t.Errorf("seed %d: alpha[%d] = %v outside [0, %v]", seed, i, got.Alpha[i], bound[i])
			}
			if math.Abs(got.Alpha[i]-want[i]) > 1e-6*max(1, bound[i]) {
				t.Errorf("seed %d: alpha[%d] = %v, brute force %v", seed, i, got.Alpha[i], want[i])
			}
		}
	}
}

// TestTwoPointClosedForm: one example per class. By symmetry b = 0 and
// a_1 = a_2 = a maximises 2a − a²(1 − k) with k = K(x_1, x_2), so
// a = 1/(1 − k) and f(x) = a (K(x_1, x) − K(x_2, x)).
func TestTwoPointClosedForm(t *testing.T) {
	x1, x2 := []float64{0, 0}, []float64{1, 2}
	gamma := 0.3
	k := math.Exp(-gamma * 5)
	a := 1 / (1 - k)
	m, err := Train(context.Background(), [][]float64{x1, x2}, []bool{true, false}, Params{C: 100, Gamma: gamma, Tol: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range [][]float64{x1, x2, {0.5, 1}, {3, -1}} {
		want := a * (math.Exp(-gamma*sqDist(x1, x)) - math.Exp(-gamma*sqDist(x2, x)))
		if got := m.Decision(x); math.Abs(got-want) > 1e-9 {
			t.Errorf("f(%v) = %v, want %v", x, got, want)
		}
	}
	// With C below 1/(1−k) both variables sit at the bound C.
	m, err = Train(context.Background(), [][]float64{x1, x2}, []bool{true, false}, Params{C: 0.5, Gamma: gamma, Tol: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(m.Coef[0]-0.5) > 1e-12 || math.Abs(m.Coef[1]+0.5) > 1e-12 || math.Abs(m.Bias) > 1e-12 {
		t.Errorf("bounded case: coef %v bias %v, want ±0.5 and 0", m.Coef, m.Bias)
	}
}

// TestKKT checks the optimality conditions of the dual on problems too large
// to enumerate: a_i = 0 ⇒ y_i f_i ≥ 1, 0 < a_i < C ⇒ y_i f_i = 1,
// a_i = C ⇒ y_i f_i ≤ 1, plus feasibility.
func TestKKT(t *testing.T) {
	cases := []struct {
		name     string
		shift    float64
		C, gamma float64
	}{
		{"overlap", 0.7, 1, 0.2},
		{"overlap large C", 0.7, 1000, 0.2},
		{"separable", 4, 1e3, 0.1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			X, y := randProblem(7, 120, 4, tc.shift)
			g := RBFGram(X, tc.gamma)
			const tol = 1e-6
			sol, err := Solve(context.Background(), g, y, Params{C: tc.C, Tol: tol})
			if err != nil {
				t.Fatal(err)
			}
			if !sol.Converged {
				t.Fatal("not converged")
			}
			var ya float64
			errs := 0
			for i, a := range sol.Alpha {
				if a < 0 || a > tc.C {
					t.Fatalf("alpha[%d]=%v outside [0, %v]", i, a, tc.C)
				}
				ya += sign(y[i]) * a
				yf := sign(y[i]) * sol.Decision(g, y, i)
				if yf <= 0 {
					errs++
				}
				// The stopping rule bounds the violation by tol overall.
				switch {
				case a == 0 && yf < 1-tol:
					t.Errorf("a=0 but y f = %v", yf)
				case a == tc.C && yf > 1+tol:
					t.Errorf("a=C but y f = %v", yf)
				case a > 0 && a < tc.C && math.Abs(yf-1) > tol:
					t.Errorf("free a but y f = %v", yf)
				}
			}
			if math.Abs(ya) > 1e-9 {
				t.Errorf("yᵀa = %v", ya)
			}
			if tc.shift > 3 && errs > 0 {
				t.Errorf("separable data: %d training errors", errs)
			}
		})
	}
}

func TestTrainErrors(t *testing.T) {
	X := [][]float64{{0}, {1}}
	y := []bool{true, false}
	for _, tc := range []struct {
		name string
		X    [][]float64
		y    []bool
		p    Params
	}{
		{"zero C", X, y, Params{C: 0, Gamma: 1}},
		{"negative gamma", X, y, Params{C: 1, Gamma: -1}},
		{"NaN", [][]float64{{math.NaN()}, {1}}, y, Params{C: 1, Gamma: 1}},
		{"ragged", [][]float64{{0}, {1, 2}}, y, Params{C: 1, Gamma: 1}},
		{"label count", X, []bool{true}, Params{C: 1, Gamma: 1}},
		{"empty", nil, nil, Params{C: 1, Gamma: 1}},
	} {
		if _, err := Train(context.Background(), tc.X, tc.y, tc.p); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: err = %v, want ErrBadInput", tc.name, err)
		}
	}
}

func TestSingleClassIsConstant(t *testing.T) {
	m, err := Train(context.Background(), [][]float64{{0}, {1}}, []bool{false, false}, Params{C: 1, Gamma: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m.Decision([]float64{0}) != -1 || len(m.SV) != 0 {
		t.Errorf("single negative class: decision %v, %d SVs", m.Decision([]float64{0}), len(m.SV))
	}
}

func TestSolveHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	X, y := randProblem(1, 10, 2, 1)
	if _, err := Solve(ctx, RBFGram(X, 1), y, Params{C: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestPositivePartMatchesMax holds the selection passes' branch-free
// positivePart to the builtin max(x, 0) it replaced, bit for bit, on the
// values where the two could part: signed zeros, subnormals, the extremes
// and infinities, and random finite values of either sign.
func TestPositivePartMatchesMax(t *testing.T) {
	xs := []float64{0, math.Copysign(0, -1), 1, -1, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		math.MaxFloat64, -math.MaxFloat64, math.Inf(1), math.Inf(-1), 1e-300, -1e-300}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		xs = append(xs, (r.Float64()-0.5)*math.Pow(10, float64(r.IntN(40)-20)))
	}
	for _, x := range xs {
		if got, want := positivePart(x), max(x, 0); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("positivePart(%v) = %v (bits %x), max = %v (bits %x)", x, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}

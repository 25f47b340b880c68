package svm

import (
	"context"
	"errors"
	"math"
	"testing"
)

// TestSolveBoundedFrom: a warm start reaches the optimum of the cold start
// (dual objective within the tolerance's reach) from the cold solution of a
// nearby problem (boxes twice as large), in fewer iterations when started
// at the problem's own solution, and nil is exactly the cold solver. It
// catches a gradient not initialised to Q·alpha0 − e (a wrong optimum) and
// a start that is ignored (no fewer iterations).
func TestSolveBoundedFrom(t *testing.T) {
	ctx := context.Background()
	X, y := randProblem(11, 60, 3, 0.6)
	g := RBFGram(X, 0.5)
	small, large := make([]float64, len(y)), make([]float64, len(y))
	for i := range y {
		small[i], large[i] = 2, 4
	}
	p := Params{Tol: 1e-6}
	cold, err := SolveBounded(ctx, g, y, large, p)
	if err != nil {
		t.Fatal(err)
	}
	nearby, err := SolveBounded(ctx, g, y, small, p)
	if err != nil {
		t.Fatal(err)
	}
	viaNil, err := SolveBoundedFrom(ctx, g, y, large, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if viaNil.Iter != cold.Iter || viaNil.Bias != cold.Bias {
		t.Errorf("nil start: iter %d bias %v, SolveBounded %d %v", viaNil.Iter, viaNil.Bias, cold.Iter, cold.Bias)
	}
	for _, tc := range []struct {
		name   string
		start  []float64
		fewer  bool
		maxGap float64
	}{
		{"from the smaller boxes' optimum", nearby.Alpha, false, 1e-5},
		{"from its own optimum", cold.Alpha, true, 1e-9},
	} {
		warm, err := SolveBoundedFrom(ctx, g, y, large, tc.start, p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !warm.Converged {
			t.Errorf("%s: not converged", tc.name)
		}
		want := cold.Objective(g, y)
		if d := warm.Objective(g, y) - want; math.Abs(d) > tc.maxGap*max(1, math.Abs(want)) {
			t.Errorf("%s: objective %v, cold %v", tc.name, warm.Objective(g, y), want)
		}
		if tc.fewer && warm.Iter >= cold.Iter/10 {
			t.Errorf("%s: %d iterations, cold %d", tc.name, warm.Iter, cold.Iter)
		}
	}
}

// TestSolveBoundedFromRejects: starting points outside the box or off the
// equality constraint, or of the wrong length, are bad input.
func TestSolveBoundedFromRejects(t *testing.T) {
	X, y := randProblem(12, 6, 2, 0.5)
	g := RBFGram(X, 0.5)
	bound := []float64{1, 1, 1, 1, 1, 1}
	for _, tc := range []struct {
		name  string
		alpha []float64
	}{
		{"negative", []float64{-0.1, 0, 0, 0, 0, 0}},
		{"above the box", []float64{1.5, 1.5, 0, 0, 0, 0}},
		{"unbalanced", []float64{0.5, 0, 0, 0, 0, 0}},
		{"short", []float64{0, 0}},
		{"NaN", []float64{math.NaN(), 0, 0, 0, 0, 0}},
	} {
		if _, err := SolveBoundedFrom(context.Background(), g, y, bound, tc.alpha, Params{}); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: err %v, want ErrBadInput", tc.name, err)
		}
	}
}

// TestSubIntoReusesBuffer: SubInto into a dirty buffer of enough capacity
// writes the sub-matrix Sub copies, in that buffer (no allocation), and a
// short buffer is replaced; the identity index set is the matrix itself.
// It catches entries left from the buffer's last use.
func TestSubIntoReusesBuffer(t *testing.T) {
	X, _ := randProblem(13, 12, 3, 0.5)
	g := RBFGram(X, 0.5)
	buf := make([]float64, 100)
	for i := range buf {
		buf[i] = math.NaN()
	}
	for _, idx := range [][]int{{3, 1, 7, 7, 0}, {11, 2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}} {
		want := g.Sub(idx)
		got := g.SubInto(idx, buf)
		if len(idx) == g.Len() {
			if got != g {
				t.Errorf("identity: a copy, want the matrix itself")
			}
			continue
		}
		if &got.Data()[0] != &buf[0] {
			t.Errorf("%v: not written into the buffer", idx)
		}
		for a := range idx {
			for b := range idx {
				if got.At(a, b) != want.At(a, b) {
					t.Fatalf("%v: entry (%d, %d) %v, Sub %v", idx, a, b, got.At(a, b), want.At(a, b))
				}
			}
		}
	}
	if short := g.SubInto([]int{1, 2, 3}, make([]float64, 4)); len(short.Data()) != 9 {
		t.Errorf("short buffer: %d entries", len(short.Data()))
	}
}

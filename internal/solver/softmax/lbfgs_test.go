package softmax

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// TestLBFGSKeepsCurvatureAcrossCalls: one L-BFGS iteration per call, as in
// a short M-step. Keeping the curvature pairs between calls reaches the
// optimum in far fewer calls than starting each call afresh, every call
// raises the objective (a generalized EM step), also after the targets
// change, and the memory never exceeds its bound.
func TestLBFGSKeepsCurvatureAcrossCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	p := randProblem(t, rng, 300, 5, 4, 0.01, true)
	best := make([]float64, 5*5)
	opt, err := p.MaximizeLBFGS(context.Background(), best, 2000, 1e-12)
	if err != nil {
		t.Fatal(err)
	}
	callsTo := func(keep bool) int {
		var o LBFGS
		w := make([]float64, len(best))
		for call := 1; call <= 500; call++ {
			if !keep {
				o.Reset()
			}
			res, err := o.Maximize(context.Background(), p, w, 1, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Value < res.Start {
				t.Fatalf("call %d lowered the objective: %v -> %v", call, res.Start, res.Value)
			}
			if len(o.s) > lbfgsMemory {
				t.Fatalf("%d curvature pairs kept, bound %d", len(o.s), lbfgsMemory)
			}
			if opt-res.Value < 1e-8 {
				return call
			}
		}
		return 501
	}
	kept, fresh := callsTo(true), callsTo(false)
	t.Logf("calls to reach the optimum: %d keeping the pairs, %d without", kept, fresh)
	if kept > 60 || kept*2 > fresh {
		t.Errorf("calls to the optimum: %d keeping the curvature pairs, %d without", kept, fresh)
	}

	// New targets (each row still summing to one): the kept pairs still
	// serve, and the step still climbs.
	var o LBFGS
	w := make([]float64, len(best))
	for range 30 {
		if _, err := o.Maximize(context.Background(), p, w, 3, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range p.N {
		s := 0.0
		row := p.T[i*p.Classes : (i+1)*p.Classes]
		for c := range row {
			row[c] = rng.Float64()
			s += row[c]
		}
		for c := range row {
			row[c] /= s
		}
	}
	res, err := o.Maximize(context.Background(), p, w, 20, 1e-10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !(res.Value > res.Start) || math.IsNaN(res.Value) {
		t.Errorf("after new targets: %v -> %v", res.Start, res.Value)
	}
}

package svm

import (
	"context"
	"testing"
)

// BenchmarkSolve compares second-order working-set selection (WSS 2, the
// default) with the maximal violating pair on one problem, n=800, at a
// small and a large C:
//
//	go test -run '^$' -bench Solve ./internal/solver/svm
func BenchmarkSolve(b *testing.B) {
	X, y := randProblem(21, 800, 5, 0.8)
	g := RBFGram(X, 0.2)
	for _, C := range []float64{1, 100} {
		for _, tc := range []struct {
			name  string
			first bool
		}{{"wss2", false}, {"maxviolating", true}} {
			b.Run(tc.name+"/C="+map[float64]string{1: "1", 100: "100"}[C], func(b *testing.B) {
				var sol Solution
				var err error
				for i := 0; i < b.N; i++ {
					if sol, err = Solve(context.Background(), g, y, Params{C: C, firstOrder: tc.first}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(sol.Iter), "iters")
			})
		}
	}
}

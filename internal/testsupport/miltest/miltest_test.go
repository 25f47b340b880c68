package miltest

import (
	"math"
	"testing"

	"github.com/mimlstream/mimlstream/internal/eval"
)

func report(accs ...float64) *eval.Report {
	r := &eval.Report{Repeats: 2}
	for i, a := range accs {
		r.FoldResults = append(r.FoldResults, eval.FoldResult{
			Repeat: i / 2, Fold: i % 2, TestBags: 5, TrainSeconds: 1,
			Metrics: map[string]float64{"bag_accuracy": a},
		})
	}
	return r
}

func TestOracleReport(t *testing.T) {
	a := report(0.6, 0.9, 0.8, 0.4)
	b := report(0.7, 0.5, 0.8, 1.0)
	got, err := OracleReport([]*eval.Report{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.7, 0.9, 0.8, 1.0}
	for i, f := range got.FoldResults {
		if f.Metrics["bag_accuracy"] != want[i] || f.TrainSeconds != 2 {
			t.Errorf("fold %d: accuracy %v, %v s; want %v, 2 s", i, f.Metrics["bag_accuracy"], f.TrainSeconds, want[i])
		}
	}
	if math.Abs(got.BagAccuracy.Mean-0.85) > 1e-12 {
		t.Errorf("mean %v, want 0.85", got.BagAccuracy.Mean)
	}
	// Per-repeat means (0.8, 0.9) give the paper's ± std.
	r := summarise("x", got)
	if math.Abs(r.StdRepeats-math.Sqrt(0.005)) > 1e-12 {
		t.Errorf("std over repeats %v, want %v", r.StdRepeats, math.Sqrt(0.005))
	}
}

func TestOracleReportRejectsDifferentSplits(t *testing.T) {
	a := report(0.6, 0.9, 0.8, 0.4)
	b := report(0.7, 0.5, 0.8, 1.0)
	b.FoldResults[2].TestBags = 6
	if _, err := OracleReport([]*eval.Report{a, b}); err == nil {
		t.Error("reports of different splits merged without error")
	}
	if _, err := OracleReport([]*eval.Report{a, report(0.5)}); err == nil {
		t.Error("reports of different fold counts merged without error")
	}
	if _, err := OracleReport(nil); err == nil {
		t.Error("empty oracle accepted")
	}
}

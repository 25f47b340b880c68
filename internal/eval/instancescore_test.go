package eval

import (
	"context"
	"testing"

	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/evaltest"
)

// TestInstanceScoreReplacesAndAdds: a fold's InstanceScore values replace
// the measures of the same name and add the others, per fold, and the
// report aggregates them.
func TestInstanceScoreReplacesAndAdds(t *testing.T) {
	data, _ := mixedData(20)
	calls := 0
	score := func(test []*mil.Bag, preds []measure.Prediction) (map[string]float64, error) {
		calls++
		if len(test) != len(preds) {
			t.Errorf("%d bags, %d predictions", len(test), len(preds))
		}
		// A value that tells the folds apart: the test fold's size.
		return map[string]float64{measure.InstanceAccuracy: float64(len(test)) / 100, PixelAccuracy: 0.5}, nil
	}
	rep, err := Run(context.Background(), evaltest.Echo(nil, ""), data, Config{Mode: models.Inductive, Folds: 4, Seed: 1, Workers: 1, InstanceScore: score})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 4 {
		t.Fatalf("%d calls, want one per fold", calls)
	}
	for _, fr := range rep.FoldResults {
		if fr.Metrics[measure.InstanceAccuracy] != float64(fr.TestBags)/100 || fr.Metrics[PixelAccuracy] != 0.5 {
			t.Fatalf("fold metrics %v", fr.Metrics)
		}
	}
	if rep.PixelAccuracy == nil || rep.PixelAccuracy.Mean != 0.5 || rep.InstanceAccuracy.Mean != 0.05 || rep.Measure(PixelAccuracy) != rep.PixelAccuracy {
		t.Fatalf("report %+v %+v", rep.InstanceAccuracy, rep.PixelAccuracy)
	}
}

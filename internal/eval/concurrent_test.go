package eval

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/evaltest"
)

// slowEcho is the echo kind whose fit sleeps for a time that depends on the
// fit seed (so fits finish out of order), records how many fits run at once
// and the Workers each got, and fails for the seed fail (0: never).
type slowEcho struct {
	mu         sync.Mutex
	running    int
	maxRunning int
	workers    map[int]bool
	fail       int64
}

func (s *slowEcho) kind() models.Kind {
	echo := evaltest.Echo(nil, "")
	k := echo
	k.Fit = func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
		s.mu.Lock()
		s.running++
		s.maxRunning = max(s.maxRunning, s.running)
		s.workers[opt.Workers] = true
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.running--
			s.mu.Unlock()
		}()
		if opt.Seed == s.fail {
			return nil, errors.New("planted failure")
		}
		select {
		case <-time.After(time.Duration(uint64(opt.Seed)%7) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return echo.Fit(ctx, train, opt)
	}
	return k
}

// TestConcurrentFoldsDeterministic runs 3×5-fold cross-validation with
// worker budgets 1, 2, 3 and 8: the fold results (measures, seeds, order)
// are identical, no more fits than the budget run at once, and each fit gets
// its share of the budget.
func TestConcurrentFoldsDeterministic(t *testing.T) {
	data, _ := mixedData(40)
	var ref *Report
	for _, budget := range []int{1, 2, 3, 8} {
		se := &slowEcho{workers: map[int]bool{}}
		rep, err := Run(context.Background(), se.kind(), data, Config{Folds: 5, Repeats: 3, Seed: 4, Workers: budget})
		if err != nil {
			t.Fatal(err)
		}
		if se.maxRunning > budget {
			t.Errorf("budget %d: %d fits ran at once", budget, se.maxRunning)
		}
		wantWorkers := map[int]bool{max(1, budget/min(budget, 15)): true}
		if !reflect.DeepEqual(se.workers, wantWorkers) {
			t.Errorf("budget %d: fits got Workers %v, want %v", budget, se.workers, wantWorkers)
		}
		if budget > 1 && se.maxRunning < 2 {
			t.Errorf("budget %d: fits never overlapped", budget)
		}
		for i, fr := range rep.FoldResults {
			if fr.Repeat != i/5 || fr.Fold != i%5 {
				t.Fatalf("budget %d: fold result %d is repeat %d fold %d", budget, i, fr.Repeat, fr.Fold)
			}
			if budget > 1 && fr.TrainCPUSeconds != 0 {
				t.Errorf("budget %d: per-fold CPU time %v reported for concurrent fits", budget, fr.TrainCPUSeconds)
			}
		}
		if ref == nil {
			ref = rep
			continue
		}
		for i := range rep.FoldResults {
			a, b := ref.FoldResults[i], rep.FoldResults[i]
			if !reflect.DeepEqual(a.Metrics, b.Metrics) || a.FitSeed != b.FitSeed || a.TrainBags != b.TrainBags || a.TestBags != b.TestBags {
				t.Errorf("budget %d: fold %d differs from budget 1: %+v vs %+v", budget, i, b, a)
			}
		}
		if !reflect.DeepEqual(ref.InstanceAccuracy, rep.InstanceAccuracy) || !reflect.DeepEqual(ref.AveragePrecision, rep.AveragePrecision) {
			t.Errorf("budget %d: aggregates differ", budget)
		}
	}
}

// TestConcurrentFoldsFirstError: when a fit fails, the run reports that
// failure (not the cancellation it causes in the other fits) and the fold.
func TestConcurrentFoldsFirstError(t *testing.T) {
	data, _ := mixedData(40)
	failSeed := mixSeed(4, 0, 3)
	se := &slowEcho{workers: map[int]bool{}, fail: failSeed}
	_, err := Run(context.Background(), se.kind(), data, Config{Folds: 5, Seed: 4, Workers: 3})
	if err == nil || !strings.Contains(err.Error(), "planted failure") || !strings.Contains(err.Error(), "fold 3") || errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the planted failure of fold 3", err)
	}
}

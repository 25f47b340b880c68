package quality

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestScoreAgreesWithMeasure sums Score over random bags and predictions
// and compares the means with package measure's Accumulator, the offline
// reference: it catches a per-bag score with other conventions (ties, empty
// or full label sets, unknown instance classes) than the offline figures.
func TestScoreAgreesWithMeasure(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const q = 5
	for trial := range 50 {
		acc := measure.NewAccumulator(q)
		var sum Record
		for b := range 1 + r.IntN(30) {
			bag := &mil.Bag{ID: "b"}
			n := 1 + r.IntN(4)
			bag.Labels = []int{}
			for c := range q {
				if r.Float64() < 0.3 || (trial%7 == 0 && b%3 == 0) { // some full sets
					bag.Labels = append(bag.Labels, c)
				}
			}
			p := models.Annotation{BagScores: make([]float64, q), BagLabels: []int{}}
			for c := range q {
				p.BagScores[c] = float64(r.IntN(4)) // ties on purpose
				if p.BagScores[c] >= 2 {
					p.BagLabels = append(p.BagLabels, c)
				}
			}
			if trial%2 == 0 {
				for range n {
					bag.InstanceLabels = append(bag.InstanceLabels, r.IntN(q+1)-1) // -1: unknown
					p.InstanceLabels = append(p.InstanceLabels, r.IntN(q))
				}
			}
			rec, err := Score(bag, q, p)
			if err != nil {
				t.Fatal(err)
			}
			sum.Add(rec)
			if err := acc.Add(bag, measure.Prediction{InstanceLabels: p.InstanceLabels, BagLabels: p.BagLabels, BagScores: p.BagScores}); err != nil {
				t.Fatal(err)
			}
		}
		want := acc.Result()
		same := func(a, b float64) bool { return (math.IsNaN(a) && math.IsNaN(b)) || math.Abs(a-b) < 1e-12 }
		if !same(sum.HammingLoss(), want.HammingLoss) || !same(sum.AveragePrecision(), want.AveragePrecision) ||
			!same(sum.InstanceAccuracy(), want.InstanceAccuracy) || sum.Ranked != int64(want.Ranked) || sum.Instances != int64(want.Instances) {
			t.Fatalf("trial %d: live %v/%v/%v (%+v), measure %v/%v/%v", trial, sum.HammingLoss(), sum.AveragePrecision(), sum.InstanceAccuracy(), sum,
				want.HammingLoss, want.AveragePrecision, want.InstanceAccuracy)
		}
	}
	// An unlabeled bag scores nothing, even with audit instance labels.
	if rec, err := Score(&mil.Bag{ID: "u", InstanceLabels: []int{1}}, q, models.Annotation{InstanceLabels: []int{1}}); err != nil || rec != (Record{}) {
		t.Errorf("unlabeled bag scored %+v, %v", rec, err)
	}
	if _, err := Score(&mil.Bag{ID: "x", Labels: []int{7}}, q, models.Annotation{}); err == nil {
		t.Error("a label outside the vocabulary scored without error")
	}
}

// TestDecide checks the policy on hand-made sums: it catches a judge that
// decides on too few bags, ignores a measure, or reads the direction of a
// measure backwards.
func TestDecide(t *testing.T) {
	rec := func(bags int64, hamming, ap, acc float64) Record {
		return Record{Bags: bags, Hamming: hamming * float64(bags), Ranked: bags, AP: ap * float64(bags), Instances: 100, Correct: int64(acc * 100)}
	}
	p := Policy{MinBags: 100, Margin: 0.01}
	for _, tc := range []struct {
		name             string
		cand, cur        Record
		decided, promote bool
		reasonContains   string
	}{
		{"too few bags", rec(99, 0.1, 0.5, 0.5), rec(99, 0.2, 0.4, 0.4), false, false, "99 of 100"},
		{"better everywhere", rec(100, 0.1, 0.6, 0.6), rec(100, 0.2, 0.5, 0.5), true, true, "not worse"},
		{"equal", rec(100, 0.1, 0.5, 0.5), rec(100, 0.1, 0.5, 0.5), true, true, "not worse"},
		{"within the margin", rec(100, 0.105, 0.495, 0.5), rec(100, 0.1, 0.5, 0.5), true, true, "not worse"},
		{"hamming worse", rec(100, 0.12, 0.6, 0.6), rec(100, 0.1, 0.5, 0.5), true, false, "hamming loss"},
		{"precision worse", rec(100, 0.1, 0.48, 0.6), rec(100, 0.1, 0.5, 0.5), true, false, "average precision"},
		{"accuracy worse", rec(100, 0.1, 0.5, 0.48), rec(100, 0.1, 0.5, 0.5), true, false, "instance accuracy"},
		{"candidate fails where current annotates", Record{Bags: 90, Hamming: 9, Failed: 10}, rec(90, 0.2, 0.5, 0.5), true, false, "failed on 10 of 100"},
		{"no audit labels: accuracy not compared", Record{Bags: 100, Hamming: 10, Ranked: 100, AP: 50}, Record{Bags: 100, Hamming: 10, Ranked: 100, AP: 50, Instances: 10, Correct: 10}, true, true, "not worse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, pr, reason := p.Decide(tc.cand, tc.cur)
			if d != tc.decided || pr != tc.promote || !strings.Contains(reason, tc.reasonContains) {
				t.Errorf("Decide = %v, %v, %q; want %v, %v, containing %q", d, pr, reason, tc.decided, tc.promote, tc.reasonContains)
			}
		})
	}
}

// TestFlushKeepsScoresWhileRedisIsDown catches scores lost when Redis is
// unreachable: they stay in memory and reach Redis once it is back.
func TestFlushKeepsScoresWhileRedisIsDown(t *testing.T) {
	addr, _, _ := streamtest.StartRedis(t)
	proxy, err := streamtest.NewProxy(addr)
	if err != nil {
		t.Fatal(err)
	}
	prdb, err := redisflag.Dial(context.Background(), redisflag.Options{Addr: proxy.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer prdb.Close()
	reg := featurestore.NewRegistry(prdb, "p")
	st := NewStore(prdb, "p", time.Minute, time.Hour)
	tr, err := New(Config{Store: st, Registry: reg, Kinds: models.NewRegistry(streamtest.CentroidKind()), SampleRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	ds := streamtest.SmallDataset(20)
	m, err := streamtest.CentroidKind().Fit(context.Background(), ds, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meta := featurestore.VersionMeta{Version: "v1", Classes: ds.Classes, Dim: ds.Dim}
	ctx := context.Background()
	for i := range ds.Bags[:10] {
		tr.Observe(ctx, m, meta, &ds.Bags[i])
	}
	proxy.Down()
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if err := tr.Flush(fctx); err == nil {
		t.Error("Flush with Redis down reported no error")
	}
	cancel()
	for i := range ds.Bags[10:] {
		tr.Observe(ctx, m, meta, &ds.Bags[10+i])
	}
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	streamtest.WaitFor(t, 10*time.Second, "flush after Redis is back", func() bool { return tr.Flush(ctx) == nil })
	got, err := st.Total(ctx, "v1")
	if err != nil || got.Bags != 20 || got.Instances != 60 || got.Correct != 60 {
		t.Errorf("after the outage Redis holds %+v (%v), want 20 bags, 60 of 60 instances right", got, err)
	}
}

// TestStoreWindowRolls adds scores at several times and reads the rolling
// window, the series and the totals: it catches a window that keeps old
// buckets (a figure that never recovers after a bad hour) or drops recent
// ones, and buckets that mix versions.
func TestStoreWindowRolls(t *testing.T) {
	_, rdb, _ := streamtest.StartRedis(t)
	st := NewStore(rdb, "w", time.Minute, 2*time.Hour)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	add := func(v string, ago time.Duration, bags int64, hamming float64) {
		t.Helper()
		if err := st.Add(ctx, v, t0.Add(-ago), Record{Bags: bags, Hamming: hamming}); err != nil {
			t.Fatal(err)
		}
	}
	add("v1", 30*time.Minute, 10, 5) // outside a 10-minute window
	add("v1", 5*time.Minute, 4, 1)
	add("v1", 0, 6, 0.5)
	add("v1", 0, 2, 0.5) // same bucket: summed
	add("v2", 0, 100, 100)
	w, err := st.Window(ctx, "v1", t0, 10*time.Minute)
	if err != nil || w.Bags != 12 || w.Hamming != 2 {
		t.Errorf("v1 window = %+v, %v; want 12 bags, Hamming sum 2", w, err)
	}
	tot, err := st.Total(ctx, "v1")
	if err != nil || tot.Bags != 22 || tot.Hamming != 7 {
		t.Errorf("v1 total = %+v, %v; want 22 bags, Hamming sum 7", tot, err)
	}
	series, err := st.Series(ctx, "v1", t0.Add(-time.Hour))
	if err != nil || len(series) != 3 || series[0].Bags != 10 || series[2].Bags != 8 || !series[2].Start.Equal(t0.Truncate(time.Minute)) {
		t.Errorf("v1 series = %+v, %v; want buckets of 10, 4 and 8 bags, the last at %v", series, err, t0.Truncate(time.Minute))
	}
}

// failing is a model whose every annotation fails.
type failing struct{ models.Model }

func (failing) Annotate(context.Context, *mil.Bag, models.Mode) (models.Annotation, error) {
	return models.Annotation{}, errors.New("boom")
}

// candidateRegistry is a registry of aliases only, recording what Judge did.
type candidateRegistry struct {
	aliases            map[string]string
	promoted, rejected []string
}

func (r *candidateRegistry) Alias(_ context.Context, a string) (string, error) {
	if v, ok := r.aliases[a]; ok {
		return v, nil
	}
	return "", featurestore.ErrNotFound
}

func (r *candidateRegistry) Meta(_ context.Context, v string) (featurestore.VersionMeta, error) {
	return featurestore.VersionMeta{Version: v}, nil
}

func (r *candidateRegistry) PromoteCandidate(_ context.Context, v string, _ ...featurestore.PromoteOption) error {
	r.promoted = append(r.promoted, v)
	return nil
}

func (r *candidateRegistry) ClearCandidate(_ context.Context, v string) error {
	r.rejected = append(r.rejected, v)
	return nil
}

// TestFailingCandidateRejected runs a candidate that fails on every bag in
// shadow: it catches a candidate that errors where current annotates being
// never judged (its failures leave no score, so it would never reach the
// minimum) or, worse, promoted.
func TestFailingCandidateRejected(t *testing.T) {
	_, rdb, _ := streamtest.StartRedis(t)
	st := NewStore(rdb, "f", time.Minute, time.Hour)
	reg := featurestore.NewRegistry(rdb, "f")
	tr, err := New(Config{Store: st, Registry: reg, Kinds: models.NewRegistry(streamtest.CentroidKind()), SampleRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	ds := streamtest.SmallDataset(30)
	m, err := streamtest.CentroidKind().Fit(context.Background(), ds, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meta := featurestore.VersionMeta{Version: "v1", Classes: ds.Classes, Dim: ds.Dim}
	tr.shadow.Store(&shadowModel{model: failing{m}, meta: featurestore.VersionMeta{Version: "v2", Classes: ds.Classes, Dim: ds.Dim}})
	ctx := context.Background()
	for i := range ds.Bags {
		tr.Observe(ctx, m, meta, &ds.Bags[i])
	}
	if err := tr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cand, cur, err := st.Shadow(ctx, "v2", "v1")
	if err != nil || cand.Failed != 30 || cand.Bags != 0 || cur.Bags != 0 {
		t.Fatalf("shadow sums %+v / %+v (%v), want 30 failures and no scores", cand, cur, err)
	}
	cr := &candidateRegistry{aliases: map[string]string{featurestore.AliasCurrent: "v1", featurestore.AliasCandidate: "v2"}}
	v, err := Judge(ctx, cr, st, Policy{MinBags: 20, Margin: 0.01}, time.Now())
	if err != nil || v == nil || v.Promoted || len(cr.rejected) != 1 || len(cr.promoted) != 0 {
		t.Fatalf("Judge = %+v, %v; registry promoted %v rejected %v; want v2 rejected", v, err, cr.promoted, cr.rejected)
	}
	t.Logf("verdict: %s", v.Reason)
}

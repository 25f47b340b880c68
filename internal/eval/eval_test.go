package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/folds"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/evaltest"
)

func TestStat(t *testing.T) {
	tests := []struct {
		xs   []float64
		want Stat
	}{
		{[]float64{1, 2, 3, 4}, Stat{Mean: 2.5, Std: math.Sqrt(5.0 / 3), N: 4}},
		{[]float64{0.7}, Stat{Mean: 0.7, N: 1}},
		{[]float64{2, 2, 2}, Stat{Mean: 2, N: 3}},
		{nil, Stat{}},
	}
	for _, tc := range tests {
		got := NewStat(tc.xs)
		if math.Abs(got.Mean-tc.want.Mean) > 1e-12 || math.Abs(got.Std-tc.want.Std) > 1e-12 || got.N != tc.want.N {
			t.Errorf("NewStat(%v) = %+v, want %+v", tc.xs, got, tc.want)
		}
	}
}

// mixedData returns n bags over 3 classes, every third one of type B. With
// the echo model:
//
//	type A: labels {0,1}, instances (1,0,0) and (0,1,0), both annotated right;
//	  bag prediction {0,1}: Hamming 0; scores (1,1,0): one-error 0,
//	  coverage 1, ranking loss 0, average precision 1.
//	type B: labels {2}, one instance (0,0.9,0.1) annotated 1 inductively
//	  (wrong) and 2 transductively (right); bag prediction {1}: Hamming 2/3;
//	  scores (0,0.9,0.1): one-error 1, coverage 1, ranking loss 1/2,
//	  average precision 1/2.
func mixedData(n int) (*mil.Dataset, func(i int) bool) {
	isB := func(i int) bool { return i%3 == 2 }
	d := &mil.Dataset{Name: "mixed", Classes: []string{"a", "b", "c"}, Dim: 3}
	for i := 0; i < n; i++ {
		if isB(i) {
			d.Bags = append(d.Bags, mil.Bag{ID: fmt.Sprintf("b%d", i), Instances: [][]float64{{0, 0.9, 0.1}},
				Labels: []int{2}, InstanceLabels: []int{2}})
		} else {
			d.Bags = append(d.Bags, mil.Bag{ID: fmt.Sprintf("a%d", i), Instances: [][]float64{{1, 0, 0}, {0, 1, 0}},
				Labels: []int{0, 1}, InstanceLabels: []int{0, 1}})
		}
	}
	return d, isB
}

// TestRunInductive checks the measures of every fold against the closed form
// for its mix of A and B bags, the aggregation, and that each fit saw
// exactly the bags outside its test fold.
func TestRunInductive(t *testing.T) {
	const n, k, seed = 31, 5, 11
	data, isB := mixedData(n)
	rec := &evaltest.Recorder{}
	rep, err := Run(context.Background(), evaltest.Echo(rec, ""), data, Config{Mode: models.Inductive, Folds: k, Seed: seed, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	split, _ := folds.KFold(n, k, seed, 0)
	if len(rep.FoldResults) != k || len(rep.FoldTrainSeconds) != k {
		t.Fatalf("%d fold results, %d fold times, want %d", len(rep.FoldResults), len(rep.FoldTrainSeconds), k)
	}
	want := map[string][]float64{}
	// Fits run concurrently: find each fold's fit by its seed.
	fits := map[int64]evaltest.Fit{}
	for _, fit := range rec.Fits() {
		fits[fit.Seed] = fit
	}
	for f, test := range split {
		a, b := 0.0, 0.0
		inTest := map[string]bool{}
		for _, i := range test {
			inTest[data.Bags[i].ID] = true
			if isB(i) {
				b++
			} else {
				a++
			}
		}
		want[measure.InstanceAccuracy] = append(want[measure.InstanceAccuracy], 2*a/(2*a+b))
		want[measure.HammingLoss] = append(want[measure.HammingLoss], 2.0/3*b/(a+b))
		want[measure.OneError] = append(want[measure.OneError], b/(a+b))
		want[measure.Coverage] = append(want[measure.Coverage], 1)
		want[measure.RankingLoss] = append(want[measure.RankingLoss], b/2/(a+b))
		want[measure.AveragePrecision] = append(want[measure.AveragePrecision], (a+b/2)/(a+b))

		fr := rep.FoldResults[f]
		if fr.TestBags != len(test) || fr.TrainBags != n-len(test) {
			t.Errorf("fold %d: %d train / %d test bags, want %d / %d", f, fr.TrainBags, fr.TestBags, n-len(test), len(test))
		}
		fit, ok := fits[fr.FitSeed]
		if !ok || len(fit.Train) != n-len(test) {
			t.Errorf("fold %d: fit on %d bags, want %d", f, len(fit.Train), n-len(test))
		}
		for _, id := range fit.Train {
			if inTest[id] {
				t.Errorf("fold %d: test bag %s was in the training set", f, id)
			}
		}
	}
	for name, xs := range want {
		s := NewStat(xs)
		got := rep.Measure(name)
		if got == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if math.Abs(got.Mean-s.Mean) > 1e-12 || math.Abs(got.Std-s.Std) > 1e-12 || got.N != k {
			t.Errorf("%s = %+v, want %+v", name, *got, s)
		}
		for f, fr := range rep.FoldResults {
			if math.Abs(fr.Metrics[name]-xs[f]) > 1e-12 {
				t.Errorf("fold %d %s = %v, want %v", f, name, fr.Metrics[name], xs[f])
			}
		}
	}
	if rep.BagAccuracy != nil {
		t.Error("bag accuracy reported for multi-label data")
	}
	sum := 0.0
	for _, s := range rep.FoldTrainSeconds {
		sum += s
	}
	if math.Abs(sum-rep.TrainSeconds) > 1e-9 {
		t.Errorf("train_seconds %v is not the sum of the folds' %v", rep.TrainSeconds, sum)
	}
}

func TestRunTransductive(t *testing.T) {
	data, _ := mixedData(12)
	rec := &evaltest.Recorder{}
	rep, err := Run(context.Background(), evaltest.Echo(rec, ""), data, Config{Mode: models.Transductive, Folds: 10, Repeats: 2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	// Fitted on all bags, once per repeat, with different seeds.
	fits := rec.Fits()
	if len(fits) != 2 || len(fits[0].Train) != 12 || len(fits[1].Train) != 12 {
		t.Fatalf("fits = %d, want 2 fits on all 12 bags", len(fits))
	}
	if fits[0].Seed == fits[1].Seed {
		t.Error("repeats share a fit seed")
	}
	if rep.Folds != 1 || rep.Repeats != 2 || len(rep.FoldResults) != 2 {
		t.Errorf("folds %d repeats %d results %d, want 1, 2, 2", rep.Folds, rep.Repeats, len(rep.FoldResults))
	}
	// Knowing the label set {2}, the B bags' instances are annotated right.
	if got := rep.InstanceAccuracy; got == nil || got.Mean != 1 || got.Std != 0 {
		t.Errorf("transductive instance accuracy = %+v, want 1 ± 0", got)
	}
	if !strings.HasPrefix(rep.Protocol, "transductive") {
		t.Errorf("protocol %q", rep.Protocol)
	}
}

// binaryData returns a binary MIL set: bag i is positive when i%2 == 0;
// positives have a witness scored 0.9 except every fourth (score 0.2, a
// miss); negatives have only 0.1 instances.
func binaryData(n int) *mil.Dataset {
	d := &mil.Dataset{Name: "binary", Classes: []string{"positive"}, Dim: 1}
	for i := 0; i < n; i++ {
		b := mil.Bag{ID: fmt.Sprint(i), Labels: []int{}, Instances: [][]float64{{0.1}, {0.1}}}
		if i%2 == 0 {
			b.Labels = []int{0}
			b.Instances[1][0] = 0.9
			if i%4 == 0 {
				b.Instances[1][0] = 0.2
			}
		}
		d.Bags = append(d.Bags, b)
	}
	return d
}

func TestRunBinaryStratified(t *testing.T) {
	const n, k, seed = 40, 4, 3
	data := binaryData(n)
	rep, err := Run(context.Background(), evaltest.Echo(nil, ""), data, Config{Folds: k, Seed: seed, Stratify: true})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, n)
	for i := range data.Bags {
		keys[i] = labelSetKey(&data.Bags[i])
	}
	split, _ := folds.StratifiedKFold(keys, k, seed, 0)
	var want []float64
	for _, test := range split {
		right := 0
		for _, i := range test {
			if i%4 != 0 { // negatives and detected positives
				right++
			}
		}
		want = append(want, float64(right)/float64(len(test)))
	}
	s := NewStat(want)
	if rep.BagAccuracy == nil || math.Abs(rep.BagAccuracy.Mean-s.Mean) > 1e-12 || math.Abs(rep.BagAccuracy.Std-s.Std) > 1e-12 {
		t.Errorf("bag accuracy = %+v, want %+v", rep.BagAccuracy, s)
	}
	if math.Abs(s.Mean-0.75) > 1e-12 {
		t.Errorf("stratified folds: mean bag accuracy %v, want exactly 0.75", s.Mean)
	}
	// Every bag's label set is empty or full: no ranking measure applies.
	for _, m := range []*Stat{rep.RankingLoss, rep.OneError, rep.AveragePrecision, rep.InstanceAccuracy} {
		if m != nil {
			t.Errorf("undefined measure reported: %+v", *m)
		}
	}
	if !rep.Stratify {
		t.Error("report does not say the folds were stratified")
	}
}

// TestRunDeterministic: the same seed gives the same report whatever the
// number of workers; repeats use different splits and seeds.
func TestRunDeterministic(t *testing.T) {
	data, _ := mixedData(40)
	run := func(workers int) *Report {
		rep, err := Run(context.Background(), evaltest.Echo(nil, ""), data, Config{Folds: 4, Repeats: 3, Seed: 9, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	a, b := run(1), run(8)
	if len(a.FoldResults) != 12 {
		t.Fatalf("%d fold results, want 12", len(a.FoldResults))
	}
	seeds := map[int64]bool{}
	for i := range a.FoldResults {
		fa, fb := a.FoldResults[i], b.FoldResults[i]
		if !reflect.DeepEqual(fa.Metrics, fb.Metrics) || fa.FitSeed != fb.FitSeed || fa.Repeat != fb.Repeat || fa.Fold != fb.Fold {
			t.Errorf("fold %d differs between 1 and 8 workers: %+v vs %+v", i, fa, fb)
		}
		seeds[fa.FitSeed] = true
	}
	if len(seeds) != 12 {
		t.Errorf("%d distinct fit seeds over 12 fits", len(seeds))
	}
	if reflect.DeepEqual(a.FoldResults[0].Metrics, a.FoldResults[4].Metrics) &&
		reflect.DeepEqual(a.FoldResults[1].Metrics, a.FoldResults[5].Metrics) &&
		reflect.DeepEqual(a.FoldResults[2].Metrics, a.FoldResults[6].Metrics) {
		t.Error("repeats 0 and 1 look identical: same fold split?")
	}
}

func TestRunSplit(t *testing.T) {
	data, _ := mixedData(9)
	rec := &evaltest.Recorder{}
	split := &Split{Train: []int{0, 1, 2, 3, 4, 5}, Test: []int{6, 7, 8}} // test: a6 a7 b8
	rep, err := Run(context.Background(), evaltest.Echo(rec, ""), data, Config{Split: split, Folds: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.FoldResults) != 1 || rep.FoldResults[0].TestBags != 3 || len(rec.Fits()[0].Train) != 6 {
		t.Fatalf("fold results %+v", rep.FoldResults)
	}
	if got := rep.InstanceAccuracy.Mean; math.Abs(got-4.0/5) > 1e-12 {
		t.Errorf("instance accuracy %v, want 4/5", got)
	}
	for _, bad := range []Split{
		{Train: []int{0}, Test: []int{9}},
		{Train: []int{0, 1}, Test: []int{1, 2}},
		{Train: []int{0, 1}},
	} {
		if _, err := Run(context.Background(), evaltest.Echo(nil, ""), data, Config{Split: &bad}); err == nil {
			t.Errorf("split %+v accepted", bad)
		}
	}
}

func TestRunErrors(t *testing.T) {
	data, _ := mixedData(10)
	_, err := Run(context.Background(), evaltest.Echo(nil, "a4"), data, Config{Folds: 5, Seed: 1})
	if !errors.Is(err, models.ErrBadInput) || !strings.Contains(err.Error(), `"a4"`) {
		t.Errorf("err = %v, want ErrBadInput naming bag a4", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, evaltest.Echo(nil, ""), data, Config{Folds: 5}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: err = %v", err)
	}
	if _, err := Run(context.Background(), evaltest.Echo(nil, ""), data, Config{Folds: 11}); err == nil {
		t.Error("more folds than bags accepted")
	}
	if _, err := Run(context.Background(), evaltest.Echo(nil, ""), data, Config{Folds: 2, Mode: "sideways"}); err == nil {
		t.Error("unknown mode accepted")
	}
}

func TestSweep(t *testing.T) {
	data, _ := mixedData(20)
	rec := &evaltest.Recorder{}
	var progress [][2]int
	cfg := Config{Folds: 2, Seed: 1, Params: models.Params{"iters": "3"},
		Progress: func(done, total int) { progress = append(progress, [2]int{done, total}) }}
	sr, err := RunSweep(context.Background(), evaltest.Echo(rec, ""), data, cfg, SweepPrune, []float64{0.5, 0.25}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The baseline 0 is run first because it was not among the values.
	var got []float64
	for _, p := range sr.Points {
		got = append(got, p.Value)
	}
	if !reflect.DeepEqual(got, []float64{0, 0.5, 0.25}) {
		t.Errorf("sweep values %v, want [0 0.5 0.25]", got)
	}
	var seen []string
	for _, f := range rec.Fits() {
		seen = append(seen, f.Params[SweepPrune])
		if f.Params["iters"] != "3" {
			t.Errorf("fixed param lost: %v", f.Params)
		}
	}
	// Interleaved: every value on fold 0, then every value on fold 1, with
	// the same fit seed for all values of a fold.
	if !reflect.DeepEqual(seen, []string{"0", "0.5", "0.25", "0", "0.5", "0.25"}) {
		t.Errorf("fits saw prune = %v", seen)
	}
	fits := rec.Fits()
	if fits[0].Seed != fits[2].Seed || fits[3].Seed != fits[5].Seed || fits[0].Seed == fits[3].Seed {
		t.Errorf("fit seeds by value and fold: %d %d %d / %d %d %d", fits[0].Seed, fits[1].Seed, fits[2].Seed,
			fits[3].Seed, fits[4].Seed, fits[5].Seed)
	}
	if cfg.Params[SweepPrune] != "" {
		t.Error("sweep mutated the caller's params")
	}
	if sr.Points[0].SpeedUp != 1 || sr.Metric != measure.InstanceAccuracy {
		t.Errorf("baseline speed-up %v metric %q", sr.Points[0].SpeedUp, sr.Metric)
	}
	for _, p := range sr.Points {
		if want := sr.Points[0].TrainSeconds / p.TrainSeconds; p.TrainSeconds > 0 && math.Abs(p.SpeedUp-want) > 1e-9 {
			t.Errorf("speed-up at %v = %v, want %v", p.Value, p.SpeedUp, want)
		}
		if p.Accuracy != *p.Report.InstanceAccuracy {
			t.Errorf("accuracy at %v = %+v, report says %+v", p.Value, p.Accuracy, *p.Report.InstanceAccuracy)
		}
	}
	if len(progress) != 6 || progress[5] != [2]int{6, 6} || progress[2] != [2]int{3, 6} {
		t.Errorf("progress = %v", progress)
	}

	for _, format := range []string{"png", "svg"} {
		var buf bytes.Buffer
		if err := PlotSweep(&buf, format, sr); err != nil {
			t.Fatal(err)
		}
		magic := map[string]string{"png": "\x89PNG", "svg": "<?xml"}[format]
		if buf.Len() < 1000 || !bytes.HasPrefix(buf.Bytes(), []byte(magic)) {
			t.Errorf("%s plot: %d bytes starting %q", format, buf.Len(), buf.Bytes()[:min(8, buf.Len())])
		}
	}
	if err := PlotSweep(&bytes.Buffer{}, "gif", sr); err == nil {
		t.Error("gif accepted")
	}
	if _, _, err := SweepDefaults("shrink"); err == nil {
		t.Error("unknown sweep accepted")
	}
}

// TestTrainCPUSeconds checks that a fit's CPU time is measured: a kind whose
// fit burns a known amount of process CPU (spinning until the counter has
// advanced, so load elsewhere cannot shorten it) must report at least that.
func TestTrainCPUSeconds(t *testing.T) {
	if _, ok := processCPU(); !ok {
		t.Skip("process CPU time is not reported on this platform")
	}
	echo := evaltest.Echo(nil, "")
	burn := echo
	burn.Fit = func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
		ms, err := strconv.Atoi(opt.Params["burn_ms"])
		if err != nil {
			return nil, err
		}
		start, _ := processCPU()
		for now := start; now-start < time.Duration(ms)*time.Millisecond; now, _ = processCPU() {
		}
		return echo.Fit(ctx, train, opt)
	}
	data, _ := mixedData(20)
	sr, err := RunSweep(context.Background(), burn, data, Config{Folds: 2, Seed: 1}, "burn_ms", []float64{40, 20}, 40)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sr.Points {
		for _, f := range p.Report.FoldResults {
			if burnt := p.Value / 1000; f.TrainCPUSeconds < burnt {
				t.Errorf("burn_ms=%v fold %d: train_cpu_seconds %v < %v", p.Value, f.Fold, f.TrainCPUSeconds, burnt)
			}
		}
		if want := sr.Points[0].TrainCPUSeconds / p.TrainCPUSeconds; math.Abs(p.CPUSpeedUp-want) > 1e-9 {
			t.Errorf("burn_ms=%v: cpu speed-up %v, want %v", p.Value, p.CPUSpeedUp, want)
		}
	}
	var buf bytes.Buffer
	if err := PlotSweep(&buf, "svg", sr); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte("CPU")) {
		t.Error("plot of a sweep with CPU times has no CPU curve legend")
	}
}

// TestEmptyLabelSetsRefusedBeforeAnyFold: a data set with empty label sets
// given to a kind that cannot learn from them fails at once with one error
// that counts them over the whole data set and names the option, before
// any fit runs (the fault caught: the first fold failing with the count of
// its own training bags, after the others' work was spent). The same data
// with the option set, or a kind that declares nothing, runs.
func TestEmptyLabelSetsRefusedBeforeAnyFold(t *testing.T) {
	ds := &mil.Dataset{Name: "toy", Classes: []string{"a", "b"}, Dim: 2}
	for i := range 20 {
		b := mil.Bag{ID: fmt.Sprintf("b%d", i), Instances: [][]float64{{float64(i % 2), float64(1 - i%2)}}, Labels: []int{i % 2}}
		if i%7 == 3 {
			b.Labels = []int{}
		}
		ds.Bags = append(ds.Bags, b)
	}
	rec := &evaltest.Recorder{}
	kind := evaltest.Echo(rec, "")
	kind.EmptyLabelSets = func(p models.Params) (bool, error) { return p.Bool("unknown", false) }
	kind.EmptyLabelSetsOption = "unknown=true"
	_, err := Run(context.Background(), kind, ds, Config{Folds: 4, Seed: 1, Workers: 1})
	if err == nil || !errors.Is(err, models.ErrBadInput) || !strings.Contains(err.Error(), "3 of the 20 bags") || !strings.Contains(err.Error(), "--param unknown=true") {
		t.Fatalf("err = %v, want one error counting 3 of the 20 bags and naming --param unknown=true", err)
	}
	if n := len(rec.Fits()); n != 0 {
		t.Errorf("%d fits ran before the refusal", n)
	}
	if _, err := Run(context.Background(), kind, ds, Config{Folds: 4, Seed: 1, Workers: 1, Params: models.Params{"unknown": "true"}}); err != nil {
		t.Errorf("with unknown=true: %v", err)
	}
	kind.EmptyLabelSets = nil
	if _, err := Run(context.Background(), kind, ds, Config{Folds: 4, Seed: 1, Workers: 1}); err != nil {
		t.Errorf("a kind declaring nothing: %v", err)
	}
}

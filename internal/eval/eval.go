// Package eval runs the evaluation protocols of the MIML instance annotation
// papers on any model kind, through models.Kind.Fit and Model.Annotate only:
//
//   - Inductive (Pham et al. 2017, §6.2): R times k-fold cross-validation.
//     The model is fitted on the training folds' weakly labeled bags and
//     annotates the test bags with their bag labels (and instance labels)
//     removed; instance accuracy and the bag measures are computed per fold.
//   - Transductive (Pham et al. 2017, §6.2, Tables 5-6): "since bag level
//     labels are known in both training and test phases, approaches are
//     trained and tested on the whole dataset". The model is fitted on every
//     bag and annotates every bag with its label set known
//     (models.Transductive); only instance accuracy is informative, the bag
//     measures are reported but are trivial for models that echo the known
//     labels. Repeats refit with different seeds.
//   - A fixed split (a dataset's own train/test partition) in either mode.
//
// Folds are not stratified unless Config.Stratify is set, in which case bags
// are stratified by their exact label set (useful for binary MIL, where the
// two strata are the positive and negative bags). The fits of a run (folds
// and repeats) run concurrently within the worker budget (Config.Workers):
// up to that many at once, each fit and its annotation given an equal share
// of the budget; a sweep runs its fits one at a time (see runVariants).
// Results are deterministic for a seed whatever the number of workers: fold
// splits come from the seed and the repeat, each fit's seed from the seed,
// the repeat and the fold, predictions are scored in bag order and folds are
// reported in order.
package eval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mimlstream/mimlstream/internal/folds"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// Split is a fixed train/test partition of a dataset's bags, by index.
type Split struct {
	Train, Test []int
}

// Config selects the protocol.
type Config struct {
	Mode models.Mode
	// Folds is k of k-fold cross-validation (inductive mode without Split).
	Folds int
	// Repeats is R: the cross-validation (or the transductive or split fit)
	// is run R times with different fold splits and fit seeds. <= 0 means 1.
	Repeats int
	Seed    int64
	// Stratify keeps each label set's share of bags equal across folds.
	Stratify bool
	// Split, when non-nil, replaces cross-validation by this partition.
	Split *Split
	// Params and Workers are passed to Kind.Fit; Workers also bounds the
	// goroutines annotating test bags (<= 0 means GOMAXPROCS).
	Params  models.Params
	Workers int
	// Progress, when non-nil, is called after each fit and annotation with
	// the number of folds done and the total.
	Progress func(done, total int)
	Logger   *slog.Logger
	// InstanceScore, when non-nil, measures a fold's instance predictions
	// where the data's own instances are not the truth's: photos, whose
	// predicted regions paint their labels on the pixels and are scored
	// against the ground-truth regions (package photoeval). Its values
	// replace the fold's measures of the same names (instance_accuracy)
	// and add others (pixel_accuracy).
	InstanceScore func(test []*mil.Bag, preds []measure.Prediction) (map[string]float64, error)
}

// PixelAccuracy names the share of ground-truth pixels painted with their
// class, the measure an InstanceScore adds for photos.
const PixelAccuracy = "pixel_accuracy"

// CharAccuracy names the share of ground-truth passages' code points
// painted with their class, the measure an InstanceScore adds for
// documents (package texteval).
const CharAccuracy = "char_accuracy"

// Stat is the mean and sample standard deviation (n-1 denominator, 0 for a
// single value) of a measure over N folds.
type Stat struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
	N    int     `json:"n"`
}

// NewStat summarises xs.
func NewStat(xs []float64) Stat {
	s := Stat{N: len(xs)}
	if s.N == 0 {
		return s
	}
	for _, x := range xs {
		s.Mean += x
	}
	s.Mean /= float64(s.N)
	if s.N > 1 {
		ss := 0.0
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.Std = math.Sqrt(ss / float64(s.N-1))
	}
	return s
}

// FoldResult is the outcome of one fit and its annotation of the test bags.
type FoldResult struct {
	Repeat       int     `json:"repeat"`
	Fold         int     `json:"fold"`
	FitSeed      int64   `json:"fit_seed"`
	TrainBags    int     `json:"train_bags"`
	TestBags     int     `json:"test_bags"`
	TrainSeconds float64 `json:"train_seconds"`
	// TrainCPUSeconds is the process CPU time the fit used (all its
	// goroutines; nothing else of the protocol runs during a fit), absent
	// where the platform does not report it and when fits ran concurrently
	// (the process clock cannot tell them apart).
	TrainCPUSeconds float64            `json:"train_cpu_seconds,omitempty"`
	AnnotateSeconds float64            `json:"annotate_seconds"`
	Metrics         map[string]float64 `json:"metrics"`
}

// Report is the outcome of a protocol run. A measure that is undefined for
// the data or the model (no instance labels, a model without class scores)
// is nil.
type Report struct {
	Model    string        `json:"model"`
	Dataset  string        `json:"dataset"`
	Protocol string        `json:"protocol"`
	Mode     models.Mode   `json:"mode"`
	Folds    int           `json:"folds"` // fits per repeat: k, or 1 for transductive and fixed splits
	Repeats  int           `json:"repeats"`
	Seed     int64         `json:"seed"`
	Params   models.Params `json:"params"`
	Stratify bool          `json:"stratified"`

	Bags      int `json:"bags"`
	Instances int `json:"instances"`
	Classes   int `json:"classes"`

	InstanceAccuracy *Stat `json:"instance_accuracy,omitempty"`
	PixelAccuracy    *Stat `json:"pixel_accuracy,omitempty"`
	CharAccuracy     *Stat `json:"char_accuracy,omitempty"`
	HammingLoss      *Stat `json:"hamming_loss,omitempty"`
	RankingLoss      *Stat `json:"ranking_loss,omitempty"`
	OneError         *Stat `json:"one_error,omitempty"`
	Coverage         *Stat `json:"coverage,omitempty"`
	AveragePrecision *Stat `json:"average_precision,omitempty"`
	// BagAccuracy (exact match of the predicted and true label sets) is
	// reported for binary MIL data (one class) only.
	BagAccuracy *Stat `json:"bag_accuracy,omitempty"`

	TrainSeconds     float64   `json:"train_seconds"`
	FoldTrainSeconds []float64 `json:"fold_train_seconds"`
	// TrainCPUSeconds is the sum of the folds' TrainCPUSeconds; when fits
	// ran concurrently, the process CPU time of the whole run (fits and
	// annotation) instead.
	TrainCPUSeconds float64      `json:"train_cpu_seconds,omitempty"`
	AnnotateSeconds float64      `json:"annotate_seconds"`
	FoldResults     []FoldResult `json:"fold_results"`
}

// Measure returns the named measure (a metrics name), or nil.
func (r *Report) Measure(name string) *Stat {
	switch name {
	case measure.InstanceAccuracy:
		return r.InstanceAccuracy
	case PixelAccuracy:
		return r.PixelAccuracy
	case CharAccuracy:
		return r.CharAccuracy
	case measure.HammingLoss:
		return r.HammingLoss
	case measure.RankingLoss:
		return r.RankingLoss
	case measure.OneError:
		return r.OneError
	case measure.Coverage:
		return r.Coverage
	case measure.AveragePrecision:
		return r.AveragePrecision
	case measure.BagAccuracy:
		return r.BagAccuracy
	}
	return nil
}

// task is one fit: train on some bags, annotate others.
type task struct {
	repeat, fold int
	train, test  []int
}

// PlannedFit is one fit of a protocol run: which bags it trains on and
// which it annotates (indices into the dataset), so another implementation
// can be run on exactly the same folds.
type PlannedFit struct {
	Repeat int   `json:"repeat"`
	Fold   int   `json:"fold"`
	Train  []int `json:"train"`
	Test   []int `json:"test"`
}

// Plan returns the fits Run makes for data under cfg, in Run's order.
func Plan(data *mil.Dataset, cfg Config) ([]PlannedFit, error) {
	tasks, _, _, err := plan(data, cfg)
	if err != nil {
		return nil, err
	}
	out := make([]PlannedFit, len(tasks))
	for i, t := range tasks {
		out[i] = PlannedFit{Repeat: t.repeat, Fold: t.fold, Train: t.train, Test: t.test}
	}
	return out, nil
}

// plan lays out the fits of a run.
func plan(data *mil.Dataset, cfg Config) (tasks []task, perRepeat int, protocol string, err error) {
	n := len(data.Bags)
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	switch {
	case cfg.Split != nil:
		// part[i] is 1 for a training bag, 2 for a test bag.
		part := make([]int, n)
		for p, idx := range [][]int{cfg.Split.Train, cfg.Split.Test} {
			for _, i := range idx {
				if i < 0 || i >= n {
					return nil, 0, "", fmt.Errorf("split index %d outside the %d bags", i, n)
				}
				if part[i] != 0 {
					return nil, 0, "", fmt.Errorf("split: bag %d listed twice (train and test must be disjoint)", i)
				}
				part[i] = p + 1
			}
		}
		if len(cfg.Split.Train) == 0 || len(cfg.Split.Test) == 0 {
			return nil, 0, "", errors.New("split has an empty train or test part")
		}
		for r := range cfg.Repeats {
			tasks = append(tasks, task{repeat: r, train: cfg.Split.Train, test: cfg.Split.Test})
		}
		return tasks, 1, fmt.Sprintf("fixed split (%d train, %d test bags)", len(cfg.Split.Train), len(cfg.Split.Test)), nil
	case cfg.Mode == models.Transductive:
		for r := range cfg.Repeats {
			tasks = append(tasks, task{repeat: r, train: all, test: all})
		}
		return tasks, 1, "transductive: fit on all bags, annotate all bags with their label sets known (Pham et al. 2017, §6.2)", nil
	}
	var keys []string
	if cfg.Stratify {
		keys = make([]string, n)
		for i := range data.Bags {
			keys[i] = labelSetKey(&data.Bags[i])
		}
	}
	for r := range cfg.Repeats {
		var fs [][]int
		if cfg.Stratify {
			fs, err = folds.StratifiedKFold(keys, cfg.Folds, cfg.Seed, uint64(r))
		} else {
			fs, err = folds.KFold(n, cfg.Folds, cfg.Seed, uint64(r))
		}
		if err != nil {
			return nil, 0, "", err
		}
		for f, test := range fs {
			tasks = append(tasks, task{repeat: r, fold: f, train: folds.Complement(n, test), test: test})
		}
	}
	strat := ""
	if cfg.Stratify {
		strat = ", stratified by label set"
	}
	return tasks, cfg.Folds, fmt.Sprintf("inductive: %dx %d-fold cross-validation%s", cfg.Repeats, cfg.Folds, strat), nil
}

// Run evaluates a model kind on a dataset under the configured protocol.
func Run(ctx context.Context, kind models.Kind, data *mil.Dataset, cfg Config) (*Report, error) {
	reps, err := runVariants(ctx, kind, data, cfg, []models.Params{cfg.Params})
	if err != nil {
		return nil, err
	}
	return reps[0], nil
}

// checkEmptyLabelSets refuses, before any fold runs, a data set with
// labeled bags of empty label set for a kind that cannot learn from them
// under params (models.Kind.EmptyLabelSets): one error naming how many
// there are in the whole data set, not the first fold's fit failing.
func checkEmptyLabelSets(kind models.Kind, data *mil.Dataset, params models.Params) error {
	if kind.EmptyLabelSets == nil {
		return nil
	}
	ok, err := kind.EmptyLabelSets(params)
	if err != nil || ok {
		return err
	}
	empty, first := 0, ""
	for i := range data.Bags {
		if b := &data.Bags[i]; b.Labels != nil && len(b.Labels) == 0 {
			if empty == 0 {
				first = b.ID
			}
			empty++
		}
	}
	if empty == 0 {
		return nil
	}
	hint := ""
	if kind.EmptyLabelSetsOption != "" {
		hint = "; --param " + kind.EmptyLabelSetsOption + " makes them valid"
	}
	return fmt.Errorf("%w: %d of the %d bags of %q (the first %q) have an empty label set, which %s cannot learn from with these parameters%s",
		models.ErrBadInput, empty, len(data.Bags), data.Name, first, kind.Name, hint)
}

// runVariants runs the protocol once per parameter set, on the same folds
// with the same fit seeds. The fits are interleaved (every variant on fold 1,
// then every variant on fold 2...) so that a change in machine load during
// the run, common on a shared machine, weighs on all variants alike and
// their training-time ratios stay comparable.
func runVariants(ctx context.Context, kind models.Kind, data *mil.Dataset, cfg Config, variants []models.Params) ([]*Report, error) {
	if cfg.Repeats <= 0 {
		cfg.Repeats = 1
	}
	if cfg.Mode == "" {
		cfg.Mode = models.Inductive
	}
	if _, err := models.ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(data.Bags) == 0 || len(data.Classes) == 0 {
		return nil, fmt.Errorf("dataset %q has %d bags and %d classes", data.Name, len(data.Bags), len(data.Classes))
	}
	if data.IsSparse() && !kind.Sparse {
		cfg.Logger.Warn("densifying sparse data for a kind without a sparse path", "kind", kind.Name,
			"dim", data.Dim, "instances", data.NumInstances())
	}
	tasks, folds, protocol, err := plan(data, cfg)
	if err != nil {
		return nil, err
	}
	reps := make([]*Report, len(variants))
	for v, params := range variants {
		if params == nil {
			params = models.Params{}
		}
		// Checked here too, not only by a Registry's Fit, so that a kind
		// passed in directly fails before the first fold, not after it.
		if err := kind.CheckParams(params); err != nil {
			return nil, err
		}
		if err := checkEmptyLabelSets(kind, data, params); err != nil {
			return nil, err
		}
		reps[v] = &Report{
			Model: kind.Name, Dataset: data.Name, Protocol: protocol, Mode: cfg.Mode,
			Folds: folds, Repeats: cfg.Repeats, Seed: cfg.Seed, Params: params,
			Stratify: cfg.Stratify && cfg.Split == nil && cfg.Mode == models.Inductive,
			Bags:     len(data.Bags), Instances: data.NumInstances(), Classes: len(data.Classes),
			FoldTrainSeconds: make([]float64, 0, len(tasks)),
		}
	}
	if len(variants) == 1 {
		if err := runConcurrent(ctx, kind, data, cfg, tasks, reps[0]); err != nil {
			return nil, err
		}
		aggregate(reps[0], len(data.Classes) == 1)
		return reps, nil
	}
	done, total := 0, len(tasks)*len(variants)
	for _, t := range tasks {
		for _, rep := range reps {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			c := cfg
			c.Params = rep.Params
			fr, err := runTask(ctx, kind, data, c, t, true)
			if err != nil {
				return nil, fmt.Errorf("%s repeat %d fold %d: %w", kind.Name, t.repeat, t.fold, err)
			}
			cfg.Logger.Debug("fold done", "model", kind.Name, "params", rep.Params, "repeat", t.repeat, "fold", t.fold,
				"train_seconds", fr.TrainSeconds, "metrics", fr.Metrics)
			rep.FoldResults = append(rep.FoldResults, fr)
			rep.FoldTrainSeconds = append(rep.FoldTrainSeconds, fr.TrainSeconds)
			rep.TrainSeconds += fr.TrainSeconds
			rep.TrainCPUSeconds += fr.TrainCPUSeconds
			rep.AnnotateSeconds += fr.AnnotateSeconds
			done++
			if cfg.Progress != nil {
				cfg.Progress(done, total)
			}
		}
	}
	for _, rep := range reps {
		aggregate(rep, len(data.Classes) == 1)
	}
	return reps, nil
}

// aggregate fills the report's measures from its folds. A measure counts
// only if every fold defines it: averaging over the folds where it happens
// to be defined would hide a model or data problem.
func aggregate(rep *Report, binary bool) {
	names := []string{measure.InstanceAccuracy, PixelAccuracy, CharAccuracy, measure.HammingLoss, measure.RankingLoss,
		measure.OneError, measure.Coverage, measure.AveragePrecision}
	if binary {
		names = append(names, measure.BagAccuracy)
	}
	for _, name := range names {
		xs := make([]float64, 0, len(rep.FoldResults))
		for _, fr := range rep.FoldResults {
			if v, ok := fr.Metrics[name]; ok {
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 || len(xs) != len(rep.FoldResults) {
			continue
		}
		s := NewStat(xs)
		switch name {
		case measure.InstanceAccuracy:
			rep.InstanceAccuracy = &s
		case PixelAccuracy:
			rep.PixelAccuracy = &s
		case CharAccuracy:
			rep.CharAccuracy = &s
		case measure.HammingLoss:
			rep.HammingLoss = &s
		case measure.RankingLoss:
			rep.RankingLoss = &s
		case measure.OneError:
			rep.OneError = &s
		case measure.Coverage:
			rep.Coverage = &s
		case measure.AveragePrecision:
			rep.AveragePrecision = &s
		case measure.BagAccuracy:
			rep.BagAccuracy = &s
		}
	}
}

// runConcurrent runs the fits of one parameter set up to the worker budget
// at a time, each with Workers = budget / fits at once, and fills rep in
// task order. The first failing task in task order is reported; the others
// are cancelled.
func runConcurrent(ctx context.Context, kind models.Kind, data *mil.Dataset, cfg Config, tasks []task, rep *Report) error {
	budget := cfg.Workers
	if budget <= 0 {
		budget = runtime.GOMAXPROCS(0)
	}
	parallel := max(1, min(budget, len(tasks)))
	c := cfg
	c.Params = rep.Params
	c.Workers = max(1, budget/parallel)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]FoldResult, len(tasks))
	errs := make([]error, len(tasks))
	var mu sync.Mutex // serialises the Progress callback
	done := 0
	var next atomic.Int64
	cpu0, cpuOK := processCPU()
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for {
				j := int(next.Add(1) - 1)
				if j >= len(tasks) || rctx.Err() != nil {
					return
				}
				t := tasks[j]
				fr, err := runTask(rctx, kind, data, c, t, parallel == 1)
				if err != nil {
					errs[j] = fmt.Errorf("%s repeat %d fold %d: %w", kind.Name, t.repeat, t.fold, err)
					cancel()
					return
				}
				cfg.Logger.Debug("fold done", "model", kind.Name, "params", rep.Params, "repeat", t.repeat, "fold", t.fold,
					"train_seconds", fr.TrainSeconds, "metrics", fr.Metrics)
				results[j] = fr
				mu.Lock()
				done++
				if cfg.Progress != nil {
					cfg.Progress(done, len(tasks))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	// The first task that failed by itself, not by the cancellation it
	// caused in the others.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for _, fr := range results {
		rep.FoldResults = append(rep.FoldResults, fr)
		rep.FoldTrainSeconds = append(rep.FoldTrainSeconds, fr.TrainSeconds)
		rep.TrainSeconds += fr.TrainSeconds
		rep.TrainCPUSeconds += fr.TrainCPUSeconds
		rep.AnnotateSeconds += fr.AnnotateSeconds
	}
	if cpu1, ok := processCPU(); parallel > 1 && ok && cpuOK {
		rep.TrainCPUSeconds = (cpu1 - cpu0).Seconds()
	}
	return nil
}

// runTask fits and scores one task; measureCPU is false when other fits run
// at the same time (the process CPU clock would count theirs too).
func runTask(ctx context.Context, kind models.Kind, data *mil.Dataset, cfg Config, t task, measureCPU bool) (FoldResult, error) {
	fr := FoldResult{Repeat: t.repeat, Fold: t.fold, FitSeed: mixSeed(cfg.Seed, t.repeat, t.fold),
		TrainBags: len(t.train), TestBags: len(t.test)}
	// Training bags keep their instance labels: the weakly supervised models
	// ignore them by contract, and the supervised upper bound (SLR) needs them.
	train := data.Subset(t.train)
	cpu0, cpuOK := processCPU()
	start := time.Now()
	m, err := kind.Fit(ctx, train, models.FitOptions{Seed: fr.FitSeed, Params: cfg.Params, Workers: cfg.Workers})
	if err != nil {
		return fr, fmt.Errorf("fit: %w", err)
	}
	fr.TrainSeconds = time.Since(start).Seconds()
	if cpu1, ok := processCPU(); ok && cpuOK && measureCPU {
		fr.TrainCPUSeconds = (cpu1 - cpu0).Seconds()
	}

	// Each query is a copy of the bag without instance labels and, in
	// inductive mode, without its label set (measure.Predict).
	test := make([]*mil.Bag, len(t.test))
	for j, i := range t.test {
		test[j] = &data.Bags[i]
	}
	start = time.Now()
	preds, err := measure.Predict(ctx, m, test, cfg.Mode, cfg.Workers)
	if err != nil {
		return fr, err
	}
	fr.AnnotateSeconds = time.Since(start).Seconds()

	res, err := measure.Score(len(data.Classes), test, preds)
	if err != nil {
		return fr, fmt.Errorf("score %s predictions: %w", kind.Name, err)
	}
	fr.Metrics = res.Values()
	if cfg.InstanceScore != nil {
		extra, err := cfg.InstanceScore(test, preds)
		if err != nil {
			return fr, fmt.Errorf("score %s predictions: %w", kind.Name, err)
		}
		maps.Copy(fr.Metrics, extra)
	}
	return fr, nil
}

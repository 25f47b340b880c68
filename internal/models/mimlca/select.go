package mimlca

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/mimlstream/mimlstream/internal/folds"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/metriclearn"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// Values of the select= parameter.
const (
	SelectNone = "none" // fit with the parameters as given (default)
	SelectCV   = "cv"   // choose capacity and hausdorff by inner cross-validation
)

// Keys recorded in Meta().Params by a select=cv fit, beside the chosen
// capacity and hausdorff.
const (
	ParamSelectFolds = "select.folds"
	ParamSelectScore = "select.score" // inner-CV average precision of the winner
)

// selectStream is the PCG stream of the inner split, distinct from the
// streams internal/eval uses for the outer split (the repeat index), so the
// inner folds are not a reshuffle aligned with the outer ones.
const selectStream = 0x73656c656374 // "select"

// Grid is the candidate grid of select=cv: every combination of the listed
// values, in order. The paper's setting (capacity 1, minimal Hausdorff) comes
// first so that it wins ties.
type Grid struct {
	Capacity  []int
	Hausdorff []string
}

// DefaultGrid returns capacity ∈ {1, 9} × hausdorff ∈ {min, max}: the paper's
// setting, one label covering up to 9 instances (Zhou's scene bags have 9
// regions), and the two bag distances of citation-kNN. It is small on
// purpose: each candidate costs folds fits, and a wide grid selected on a few
// hundred bags overfits the inner folds.
func DefaultGrid() Grid {
	return Grid{Capacity: []int{1, 9}, Hausdorff: []string{metriclearn.HausdorffMin, metriclearn.HausdorffMax}}
}

// Candidates returns the parameter sets of the grid, each a copy of base with
// the grid keys set. A key already present in base is held fixed: the user
// chose it, so it is not searched.
func (g Grid) Candidates(base models.Params) []models.Params {
	caps := make([]string, len(g.Capacity))
	for i, c := range g.Capacity {
		caps[i] = strconv.Itoa(c)
	}
	if v, ok := base["capacity"]; ok {
		caps = []string{v}
	}
	hs := g.Hausdorff
	if v, ok := base["hausdorff"]; ok {
		hs = []string{v}
	}
	var out []models.Params
	for _, c := range caps {
		for _, h := range hs {
			p := maps.Clone(base)
			if p == nil {
				p = models.Params{}
			}
			delete(p, "select")
			delete(p, ParamSelectFolds)
			delete(p, ParamSelectScore)
			p["capacity"], p["hausdorff"] = c, h
			out = append(out, p)
		}
	}
	return out
}

// Selection is the outcome of the inner cross-validation.
type Selection struct {
	Candidates []models.Params
	// Scores[i] is the average precision of Candidates[i] over all inner
	// test bags (pooled, not a mean of fold means, so folds of unequal size
	// weigh by their bags).
	Scores []float64
	Best   int
}

// Select scores each candidate by a k-fold cross-validation on the
// labeled bags of train only, in inductive mode (the bag label sets of the
// inner test bags are hidden, as they are at annotation time).
//
// The score is average precision over the bag scores of citation-kNN. It is
// a ranking measure: it reads the scores of every class, so it separates
// candidates whose thresholded label sets tie, where Hamming loss (a count
// of wrong labels, over only 5 classes on Zhou's scenes) moves in coarse
// steps. Higher is better; ties go to the earlier candidate.
//
// Within one inner fold every candidate is fitted with the same seed (common
// random numbers: the k-means restarts start from the same draws), so the
// comparison is between settings, not between random starts. The result
// depends only on opt.Seed, never on opt.Workers.
//
// Candidates that differ only in hausdorff share one metric per inner fold:
// the metric learning reads neither the bag distance nor anything drawn
// after it (see learn), so it is learned once and each distance's
// citation-kNN is built on it (fitGroup). The scores are those of a
// separate fit per candidate, bit for bit (TestSelectSharedMetricMatchesSeparateFits),
// at half the metric learning of the default grid.
func Select(ctx context.Context, train *mil.Dataset, opt models.FitOptions, cands []models.Params, k int) (Selection, error) {
	if len(cands) == 0 {
		return Selection{}, fmt.Errorf("select: no candidates")
	}
	var idx []int
	for i := range train.Bags {
		if train.Bags[i].Labeled() {
			idx = append(idx, i)
		}
	}
	split, err := folds.KFold(len(idx), k, opt.Seed, selectStream)
	if err != nil {
		return Selection{}, fmt.Errorf("select: %w", err)
	}
	groups := hausdorffGroups(cands)
	accs := make([]*measure.Accumulator, len(cands))
	for c := range accs {
		accs[c] = measure.NewAccumulator(len(train.Classes))
	}
	for f, test := range split {
		inTest := make(map[int]bool, len(test))
		for _, j := range test {
			inTest[j] = true
		}
		tr := &mil.Dataset{Name: train.Name, Classes: train.Classes, Dim: train.Dim}
		te := make([]*mil.Bag, 0, len(test))
		for j, i := range idx {
			if inTest[j] {
				te = append(te, &train.Bags[i])
			} else {
				tr.Bags = append(tr.Bags, train.Bags[i])
			}
		}
		for _, g := range groups {
			ms, err := fitGroup(ctx, tr, cands, g, innerSeed(opt.Seed, f), opt.Workers)
			if err != nil {
				return Selection{}, fmt.Errorf("select: fold %d: %w", f, err)
			}
			for i, c := range g {
				preds, err := measure.Predict(ctx, ms[i], te, models.Inductive, opt.Workers)
				if err != nil {
					return Selection{}, fmt.Errorf("select: candidate %v, fold %d: %w", cands[c], f, err)
				}
				for j, b := range te {
					if err := accs[c].Add(b, preds[j]); err != nil {
						return Selection{}, fmt.Errorf("select: score candidate %v: %w", cands[c], err)
					}
				}
			}
		}
	}
	s := Selection{Candidates: cands, Scores: make([]float64, len(cands)), Best: -1}
	for c, a := range accs {
		s.Scores[c] = a.Result().AveragePrecision
		if math.IsNaN(s.Scores[c]) {
			return Selection{}, fmt.Errorf("select: %w: no inner test bag has a label set that average precision can rank", metriclearn.ErrNoData)
		}
		if s.Best < 0 || s.Scores[c] > s.Scores[s.Best] {
			s.Best = c
		}
	}
	return s, nil
}

// hausdorffGroups partitions the candidate indices into groups whose
// parameters are equal but for hausdorff, each group in candidate order and
// the groups in order of their first candidate.
func hausdorffGroups(cands []models.Params) [][]int {
	var groups [][]int
	var keys []models.Params
	for c, p := range cands {
		key := maps.Clone(p)
		delete(key, "hausdorff")
		at := slices.IndexFunc(keys, func(k models.Params) bool { return maps.Equal(k, key) })
		if at < 0 {
			keys = append(keys, key)
			groups = append(groups, nil)
			at = len(groups) - 1
		}
		groups[at] = append(groups[at], c)
	}
	return groups
}

// fitGroup fits the candidates cands[g[0]], cands[g[1]], ... (equal but for
// hausdorff) on train with seed: one metric learning, then one citation-kNN
// model per candidate, the first built from the learned metric and the
// others from the first's projected training bags. Each model equals
// fit(ctx, train, {Params: cands[c], Seed: seed}) exactly.
func fitGroup(ctx context.Context, train *mil.Dataset, cands []models.Params, g []int, seed int64, workers int) ([]*metriclearn.Model, error) {
	p0 := cands[g[0]]
	cfg, err := metriclearn.ParseConfig(p0)
	if err != nil {
		return nil, fmt.Errorf("candidate %v: %w", p0, err)
	}
	o, err := parseOptions(p0)
	if err != nil {
		return nil, fmt.Errorf("candidate %v: %w", p0, err)
	}
	l, err := learn(ctx, train, cfg, o, models.FitOptions{Params: p0, Seed: seed, Workers: workers})
	if err != nil {
		return nil, fmt.Errorf("candidate %v: %w", p0, err)
	}
	m0, err := metriclearn.Build(ctx, KindName, l.labeled, l.proj, l.assigned, cfg, p0, workers)
	if err != nil {
		return nil, fmt.Errorf("candidate %v: mimlca fit: %w", p0, err)
	}
	ms := []*metriclearn.Model{m0}
	for _, c := range g[1:] {
		cc, err := metriclearn.ParseConfig(cands[c])
		if err != nil {
			return nil, fmt.Errorf("candidate %v: %w", cands[c], err)
		}
		m, err := m0.WithHausdorff(ctx, cc.Hausdorff, cands[c], workers)
		if err != nil {
			return nil, fmt.Errorf("candidate %v: mimlca fit: %w", cands[c], err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// fitSelected runs Select on DefaultGrid() (on sparse passages, with the
// capacity fixed to passageCapacity) and refits the winner on all of
// train with opt.Seed, so the model equals a direct fit with the chosen
// parameters; Meta().Params records the choice and its inner score.
func fitSelected(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (*metriclearn.Model, Result, error) {
	c, err := parseConfig(opt.Params)
	if err != nil {
		return nil, Result{}, err
	}
	k := c.selFolds
	grid := DefaultGrid()
	if len(train.Bags) > 0 && train.Bags[0].IsSparse() {
		grid.Capacity = []int{passageCapacity(train)}
	}
	cands := grid.Candidates(opt.Params)
	// Reject bad shared parameters before paying for the inner folds.
	for _, p := range cands {
		if _, err := metriclearn.ParseConfig(p); err != nil {
			return nil, Result{}, err
		}
		if _, err := parseOptions(p); err != nil {
			return nil, Result{}, err
		}
	}
	if len(cands) == 1 {
		// Both searched keys were given (for instance a refit from the
		// Meta().Params of a selected model): nothing to choose.
		final := cands[0]
		final["select"] = SelectCV
		final[ParamSelectFolds] = strconv.Itoa(k)
		return fit(ctx, train, models.FitOptions{Params: final, Seed: opt.Seed, Workers: opt.Workers, Progress: opt.Progress})
	}
	sel, err := Select(ctx, train, opt, cands, k)
	if err != nil {
		return nil, Result{}, fmt.Errorf("mimlca fit: %w", err)
	}
	// Logged because an outer evaluation sees only the metrics, and which
	// setting each training fold picked is what tells whether the choice is
	// stable.
	attrs := []any{"capacity", sel.Candidates[sel.Best]["capacity"], "hausdorff", sel.Candidates[sel.Best]["hausdorff"],
		"bags", len(train.Bags), "seed", opt.Seed}
	for c, p := range sel.Candidates {
		attrs = append(attrs, "ap_cap"+p["capacity"]+"_"+p["hausdorff"], sel.Scores[c])
	}
	slog.InfoContext(ctx, "mimlca: setting selected by inner cross-validation", attrs...)
	final := maps.Clone(sel.Candidates[sel.Best])
	final["select"] = SelectCV
	final[ParamSelectFolds] = strconv.Itoa(k)
	final[ParamSelectScore] = strconv.FormatFloat(sel.Scores[sel.Best], 'f', 4, 64)
	return fit(ctx, train, models.FitOptions{Params: final, Seed: opt.Seed, Workers: opt.Workers, Progress: opt.Progress})
}

// innerSeed derives the seed of the fits of inner fold f (splitmix64
// finaliser) so that it differs from the outer seed and between folds.
func innerSeed(seed int64, f int) int64 {
	z := (uint64(seed) ^ 0x5e1ec7) + 0x9e3779b97f4a7c15*uint64(f+1)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64((z ^ (z >> 31)) >> 1)
}

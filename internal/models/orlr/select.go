package orlr

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"

	"github.com/mimlstream/mimlstream/internal/folds"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// Values of the select parameter.
const (
	SelectCV   = "cv"   // choose l2 by inner cross-validation on the training bags
	SelectNone = "none" // fit with l2 as given (or its default)
)

// selectFolds is k of the inner cross-validation (as misvm's and mimlca's);
// selectStream is the PCG stream of its split, apart from the outer folds'
// streams (the repeat index) so the inner folds are not aligned with them.
const (
	selectFolds  = 3
	selectStream = 0x6f726c7273656c // "orlrsel"
)

// selectL2Grid returns the candidates of select=cv, most regularised first
// (ties go to it: the smoother model). l2 weighs the mean log-likelihood,
// so it acts like an SVM's C = 1/(N·l2): on the ~2,900 training instances
// of a TREC9 fold, 1e-3 … 1e-5 is C ≈ 0.3 … 30, and 0 leaves the
// regularisation to the M-step's 10 L-BFGS iterations per EM round, which
// is what reaches 70–88% there (docs/reproductions/trec-text.md). The decades
// span the range between the default 2e-3, which flattens unit-norm text
// (feature values ~0.2) to one class, and no penalty; four candidates keep
// the search at 12 fits, and a finer grid chosen on a few hundred bags
// would fit the inner folds' noise.
func selectL2Grid() []float64 { return []float64{1e-3, 1e-4, 1e-5, 0} }

// searchL2 reports whether fit must choose l2 by inner cross-validation,
// and records the choice in cfg.Select: select=cv asks for it; without
// select it is the default for sparse data on the linear path (the dense
// default, 2e-3, was tuned on dense sets and gives chance on text) unless
// the user gave l2. A given l2 is not searched, so a refit from a selected
// model's parameters (l2 and select=cv) is a plain fit with the chosen l2.
func searchL2(cfg *Config, p models.Params, sparse bool) bool {
	_, given := p["l2"]
	switch cfg.Select {
	case SelectNone:
		return false
	case "":
		if !sparse || given {
			return false
		}
		cfg.Select = SelectCV
	}
	return !given
}

// selectL2 chooses l2 among selectL2Grid by stratified inner k-fold
// cross-validation on the labeled bags of train, which are training bags
// only: every candidate is fitted (select=none, the other parameters as
// given, one worker, opt.Seed: common random numbers) on k−1 folds and
// annotates the held-out fold inductively (its labels hidden). The score
// is the per-class bag accuracy (1 − Hamming loss, as misvm's select=cv)
// pooled over the held-out bags; the unknown class is no bag label and is
// not scored. The result depends on opt.Seed and train, never on
// opt.Workers. It returns the chosen l2 and every candidate's score.
func selectL2(ctx context.Context, train *mil.Dataset, opt models.FitOptions, cfg Config) (float64, []float64, error) {
	grid := selectL2Grid()
	var labeled []int
	var keys []string
	for i := range train.Bags {
		if b := &train.Bags[i]; b.Labeled() {
			labeled = append(labeled, i)
			keys = append(keys, fmt.Sprint(b.Labels))
		}
	}
	if len(labeled) < 2*selectFolds {
		// Too few bags to hold any out: the middle of the grid.
		return grid[len(grid)/2], nil, nil
	}
	// Stratified by label set, as the binary sets' outer folds (positive
	// and negative bags) are: a fold without positives scores nothing.
	split, err := folds.StratifiedKFold(keys, selectFolds, opt.Seed, selectStream)
	if err != nil {
		return 0, nil, fmt.Errorf("orlr select: %w", err)
	}
	scored := make([]int, 0, len(train.Classes))
	for c, name := range train.Classes {
		if !cfg.Unknown || name != UnknownClass {
			scored = append(scored, c)
		}
	}
	k := len(split)
	// right[c*k+f], total[c*k+f]: class decisions of candidate c on inner
	// fold f, each job writing its own cell.
	right, total := make([]int, len(grid)*k), make([]int, len(grid)*k)
	err = ovr.Parallel(ctx, opt.Workers, len(grid)*k, func(ctx context.Context, t int) error {
		l2, test := grid[t/k], split[t%k]
		p := maps.Clone(opt.Params)
		if p == nil {
			p = models.Params{}
		}
		p["l2"], p["select"] = strconv.FormatFloat(l2, 'g', -1, 64), SelectNone
		trainIdx := make([]int, 0, len(labeled)-len(test))
		for _, j := range folds.Complement(len(labeled), test) {
			trainIdx = append(trainIdx, labeled[j])
		}
		m, _, err := fit(ctx, train.Subset(trainIdx), models.FitOptions{Seed: opt.Seed, Workers: 1, Params: p})
		if err != nil {
			return fmt.Errorf("orlr select l2=%g: %w", l2, err)
		}
		for _, j := range test {
			b := &train.Bags[labeled[j]]
			// The label set hidden, as at annotation time; a sparse bag is
			// scored over its non-zeros (Annotate, scoresSparse).
			ann, err := m.Annotate(ctx, &mil.Bag{ID: b.ID, Instances: b.Instances, Sparse: b.Sparse}, models.Inductive)
			if err != nil {
				return fmt.Errorf("orlr select l2=%g: %w", l2, err)
			}
			got := ann.BagLabels
			for _, c := range scored {
				if slices.Contains(got, c) == slices.Contains(b.Labels, c) {
					right[t]++
				}
				total[t]++
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	scores := make([]float64, len(grid))
	best := 0
	for c := range grid {
		r, n := 0, 0
		for f := range k {
			r, n = r+right[c*k+f], n+total[c*k+f]
		}
		if n > 0 {
			scores[c] = float64(r) / float64(n)
		}
		if scores[c] > scores[best] {
			best = c
		}
	}
	// Logged because an outer evaluation sees only the metrics, and which
	// l2 each training fold picked tells whether the choice is stable.
	attrs := []any{"l2", grid[best], "bags", len(labeled), "seed", opt.Seed}
	for c, l2 := range grid {
		attrs = append(attrs, "accuracy_l2_"+strconv.FormatFloat(l2, 'g', -1, 64), scores[c])
	}
	slog.InfoContext(ctx, "orlr: l2 selected by inner cross-validation", attrs...)
	return grid[best], scores, nil
}

// Package misvm implements the two multi-instance SVM heuristics of Andrews,
// Tsochantaridis and Hofmann, "Support Vector Machines for Multiple-Instance
// Learning", NIPS 2002, as re-implemented for comparison in the SyMIL paper
// (Durand et al. 2018, Table IV: linear kernels, random latent
// initialisation, the same splits):
//
//   - mi-SVM ("mi-svm"): instance labels in positive bags are latent. An SVM
//     is trained on every instance (negative-bag instances −1), the
//     positive-bag instances are relabeled by the sign of their score, and a
//     positive bag left without a positive instance gets its top-scoring one
//     as positive; repeated until the labels are stable.
//   - MI-SVM ("misvm"): one latent witness per positive bag. An SVM is trained
//     on the witnesses (+1) and on every negative-bag instance (−1), then
//     each witness becomes its bag's top-scoring instance; repeated until the
//     witnesses are stable.
//
// Both predict a bag positive when its best instance scores above zero, and
// run one class against the rest on multi-label bags, producing the same
// model as SyMIL (package ovr). Features are standardised (param scale) and a regularised
// bias is appended, as for linear SyMIL, and the linear SVM of each round is
// trained with the same stochastic sub-gradient schedule: Pegasos steps
// η_τ = 1/(τ + C·mean‖x‖²) on ½‖w‖² + C/(2N⁺) Σ_pos hinge + C/(2N⁻) Σ_neg
// hinge over the N training instances of the round (class-balanced like
// SyMIL's n/n^± weights), averaging the iterates of the
// second half of the epochs, warm-started from the previous round.
//
// Parameters (FitOptions.Params; unknown keys are rejected):
//
//	C         SVM trade-off                                  (10000)
//	epochs    SGD passes over the training instances per round (50)
//	iters     maximum relabeling rounds                      (20)
//	restarts  random initialisations; lowest objective kept  (3)
//	init      random | bag: random latent labels and witnesses, as
//	          the SyMIL paper does for every method, or Andrews'
//	          initialisation (every instance of a positive bag
//	          positive; the witness nearest the bag mean)     (random)
//	bias      append a regularised bias                      (true)
//	scale     feature transform fitted on the training instances:
//	          zscore | none | unit (instance / ‖instance‖) |
//	          zunit (z-score, then unit norm) | minmax (each
//	          feature to [0, 1])                              (zscore)
package misvm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// Kind names.
const (
	MISVMName = "misvm"
	MiSVMName = "mi-svm"
)

// MISVMKind returns the MI-SVM (bag-level, witness) kind.
func MISVMKind() models.Kind {
	return kind(MISVMName, "MI-SVM (Andrews et al. 2002): one witness per positive bag", false)
}

// MiSVMKind returns the mi-SVM (instance-level labels) kind.
func MiSVMKind() models.Kind {
	return kind(MiSVMName, "mi-SVM (Andrews et al. 2002): latent instance labels", true)
}

func kind(name, desc string, instance bool) models.Kind {
	return models.Kind{
		Name:          name,
		Description:   desc + ", linear, one-vs-rest over the label set",
		InstanceLevel: true,
		Params:        ParamSpecs(),
		Fit: func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
			return Fit(ctx, train, opt, instance)
		},
		Decode: func(meta models.Meta, state []byte) (models.Model, error) {
			return ovr.Decode(meta, state)
		},
	}
}

// Config holds the parsed parameters.
type Config struct {
	C        float64
	Epochs   int
	Iters    int
	Restarts int
	Init     string
	Bias     bool
	Scale    ovr.Scaling
}

var _ models.Model = (*ovr.Model)(nil)

// ParamSpecs declares the keys ParseParams reads (see the package
// documentation), shared by mi-SVM and MI-SVM.
func ParamSpecs() []models.ParamSpec {
	scales := make([]string, len(ovr.Scalings))
	for i, s := range ovr.Scalings {
		scales[i] = string(s)
	}
	return []models.ParamSpec{
		{Name: "C", Type: models.ParamFloat, Default: "10000", Doc: "SVM trade-off, > 0"},
		{Name: "epochs", Type: models.ParamInt, Default: "50", Doc: "SGD passes over the training instances per relabeling round"},
		{Name: "iters", Type: models.ParamInt, Default: "20", Doc: "maximum relabeling rounds"},
		{Name: "restarts", Type: models.ParamInt, Default: "3", Doc: "random initialisations; lowest objective kept"},
		{Name: "init", Type: models.ParamEnum, Values: []string{"random", "bag"}, Default: "random",
			Doc: "random latent labels (the SyMIL paper's protocol) or Andrews' initialisation from the bags"},
		{Name: "bias", Type: models.ParamBool, Default: "true", Doc: "append a regularised bias"},
		{Name: "scale", Type: models.ParamEnum, Values: scales, Default: string(ovr.ScaleZScore),
			Doc: "feature transform fitted on the training instances (unit: instance / norm; zunit: z-score then unit; minmax: [0, 1])"},
	}
}

// ParseParams reads the parameters with the documented defaults.
func ParseParams(p models.Params) (Config, error) {
	if err := models.CheckParams(ParamSpecs(), p); err != nil {
		return Config{}, fmt.Errorf("misvm: %w", err)
	}
	var cfg Config
	var err error
	if cfg.C, err = p.Float("C", 1e4); err != nil {
		return Config{}, err
	}
	if !(cfg.C > 0) || math.IsInf(cfg.C, 0) {
		return Config{}, fmt.Errorf("misvm: C=%v must be positive", cfg.C)
	}
	for _, f := range []struct {
		key string
		dst *int
		def int
	}{{"epochs", &cfg.Epochs, 50}, {"iters", &cfg.Iters, 20}, {"restarts", &cfg.Restarts, 3}} {
		if *f.dst, err = p.Int(f.key, f.def); err != nil {
			return Config{}, err
		}
		if *f.dst < 1 {
			return Config{}, fmt.Errorf("misvm: %s=%d must be at least 1", f.key, *f.dst)
		}
	}
	cfg.Init = p.String("init", "random")
	if cfg.Init != "random" && cfg.Init != "bag" {
		return Config{}, fmt.Errorf("misvm: init=%q (want random or bag)", cfg.Init)
	}
	if cfg.Bias, err = p.Bool("bias", true); err != nil {
		return Config{}, err
	}
	if cfg.Scale, err = ovr.ParseScaling(p.String("scale", string(ovr.ScaleZScore))); err != nil {
		return Config{}, fmt.Errorf("misvm: %w", err)
	}
	return cfg, nil
}

// Fit trains mi-SVM (instance true) or MI-SVM (instance false), one class
// against the rest. Unlabeled bags are ignored; a class without positive
// (negative) training bags gets a constant scorer saying no (yes).
func Fit(ctx context.Context, train *mil.Dataset, opt models.FitOptions, instance bool) (*ovr.Model, error) {
	cfg, err := ParseParams(opt.Params)
	if err != nil {
		return nil, err
	}
	data, err := ovr.Prepare(train, cfg.Scale)
	if err != nil {
		return nil, err
	}
	x := data.Rows
	if cfg.Bias {
		x = make([][]float64, len(data.Rows))
		for i, r := range data.Rows {
			x[i] = append(slices.Clip(r), 1)
		}
	}
	r2 := 0.0
	for _, row := range x {
		r2 += dot(row, row)
	}
	r2 /= float64(len(x))
	s := &solver{cfg: cfg, x: x, tau0: math.Max(1, cfg.C*r2), instance: instance}
	name := MISVMName
	if instance {
		name = MiSVMName
	}
	k := len(train.Classes)
	st := ovr.State{Rule: ovr.Max, Scaler: data.Scaler, Scorers: make([]ovr.Scorer, k)}
	d := train.Dim
	for c := range k {
		pos := data.Positive(c)
		np := 0
		for _, v := range pos {
			if v {
				np++
			}
		}
		if np == 0 || np == len(pos) {
			b := -1.0
			if np > 0 {
				b = 1
			}
			st.Scorers[c] = ovr.Scorer{W: make([]float64, d), B: b}
			continue
		}
		ws := make([][]float64, cfg.Restarts)
		objs := make([]float64, cfg.Restarts)
		err := ovr.Parallel(ctx, opt.Workers, cfg.Restarts, func(ctx context.Context, r int) error {
			rng := rand.New(rand.NewPCG(ovr.Seed(opt.Seed, c), uint64(r)))
			w, obj, err := s.fit(ctx, data.Bags, pos, rng)
			ws[r], objs[r] = w, obj
			return err
		})
		if err != nil {
			return nil, err
		}
		best := 0
		for r := range objs {
			if objs[r] < objs[best] {
				best = r
			}
		}
		sc := ovr.Scorer{W: slices.Clone(ws[best][:d])}
		if cfg.Bias {
			sc.B = ws[best][d]
		}
		st.Scorers[c] = sc
		if opt.Progress != nil {
			opt.Progress(c+1, k)
		}
	}
	meta := models.Meta{Kind: name, Classes: train.Classes, Dim: train.Dim, InstanceLevel: true, Params: opt.Params}
	return ovr.New(meta, st)
}

type solver struct {
	cfg      Config
	x        [][]float64
	tau0     float64
	instance bool
}

func dot(a, b []float64) float64 {
	v := 0.0
	for j, x := range a {
		v += x * b[j]
	}
	return v
}

// example is one SVM training instance: a row and its ±1 label.
type example struct {
	row int
	pos bool
}

// fit runs the alternating heuristic from a random (or Andrews) latent
// initialisation and returns the final weights and their SVM objective.
func (s *solver) fit(ctx context.Context, bags [][]int, pos []bool, rng *rand.Rand) ([]float64, float64, error) {
	// lab[i][j]: latent label of instance j of positive bag i (mi-SVM);
	// wit[i]: witness index of positive bag i (MI-SVM).
	lab := make([][]bool, len(bags))
	wit := make([]int, len(bags))
	for i, b := range bags {
		if !pos[i] {
			continue
		}
		lab[i] = make([]bool, len(b))
		switch {
		case s.cfg.Init == "bag":
			for j := range b {
				lab[i][j] = true
			}
			wit[i] = s.nearestMean(b)
		default:
			some := false
			for j := range b {
				lab[i][j] = rng.IntN(2) == 1
				some = some || lab[i][j]
			}
			if !some {
				lab[i][rng.IntN(len(b))] = true
			}
			wit[i] = rng.IntN(len(b))
		}
	}
	w := make([]float64, len(s.x[0]))
	tau := 0.0
	obj := math.Inf(1)
	for range s.cfg.Iters {
		var ex []example
		for i, b := range bags {
			switch {
			case !pos[i]:
				for _, g := range b {
					ex = append(ex, example{g, false})
				}
			case s.instance:
				for j, g := range b {
					ex = append(ex, example{g, lab[i][j]})
				}
			default:
				ex = append(ex, example{b[wit[i]], true})
			}
		}
		var err error
		if w, obj, err = s.svm(ctx, ex, w, &tau, rng); err != nil {
			return nil, 0, err
		}
		changed := false
		for i, b := range bags {
			if !pos[i] {
				continue
			}
			best := 0
			for j, g := range b {
				sc := dot(w, s.x[g])
				if sc > dot(w, s.x[b[best]]) {
					best = j
				}
				if s.instance {
					l := sc > 0
					if l != lab[i][j] {
						lab[i][j], changed = l, true
					}
				}
			}
			if s.instance {
				if !slices.Contains(lab[i], true) {
					lab[i][best], changed = true, true
				}
			} else if best != wit[i] {
				wit[i], changed = best, true
			}
		}
		if !changed {
			break
		}
	}
	return w, obj, nil
}

// nearestMean returns the instance of bag b closest to the bag mean, the
// discrete stand-in for Andrews' mean initialisation of MI-SVM.
func (s *solver) nearestMean(b []int) int {
	mean := make([]float64, len(s.x[0]))
	for _, g := range b {
		for j, v := range s.x[g] {
			mean[j] += v / float64(len(b))
		}
	}
	best, bestD := 0, math.Inf(1)
	for j, g := range b {
		d := 0.0
		for k, v := range s.x[g] {
			d += (v - mean[k]) * (v - mean[k])
		}
		if d < bestD {
			best, bestD = j, d
		}
	}
	return best
}

// svm trains the class-balanced linear SVM on ex by Pegasos-style SGD from
// w (warm start), and returns the averaged iterate and its objective.
func (s *solver) svm(ctx context.Context, ex []example, w []float64, tau *float64, rng *rand.Rand) ([]float64, float64, error) {
	np := 0
	for _, e := range ex {
		if e.pos {
			np++
		}
	}
	n := len(ex)
	weight := func(p bool) float64 {
		if p {
			return float64(n) / float64(2*max(np, 1))
		}
		return float64(n) / float64(2*max(n-np, 1))
	}
	w = slices.Clone(w)
	avg := make([]float64, len(w))
	steps := s.cfg.Epochs * n
	half, counted := steps/2, 0
	for step := range steps {
		if step%n == 0 {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
		}
		e := ex[rng.IntN(n)]
		y := -1.0
		if e.pos {
			y = 1
		}
		eta := 1 / (*tau + s.tau0)
		*tau++
		margin := y * dot(w, s.x[e.row])
		for j := range w {
			w[j] *= 1 - eta
		}
		if margin < 1 {
			f := eta * s.cfg.C * weight(e.pos) * y
			for j, v := range s.x[e.row] {
				w[j] += f * v
			}
		}
		if step >= half {
			counted++
			r := 1 / float64(counted)
			for j := range avg {
				avg[j] += r * (w[j] - avg[j])
			}
		}
	}
	if counted == 0 {
		copy(avg, w)
	}
	obj := 0.5 * dot(avg, avg)
	for _, e := range ex {
		y := -1.0
		if e.pos {
			y = 1
		}
		obj += s.cfg.C / float64(n) * weight(e.pos) * math.Max(0, 1-y*dot(avg, s.x[e.row]))
	}
	return avg, obj, nil
}

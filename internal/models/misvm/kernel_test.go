package misvm

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// ringToy is MIL data that no hyperplane separates: every instance of a
// negative bag lies near the origin, and a positive bag holds such
// instances plus one on a ring of radius 3 at a random angle. A linear
// instance scorer cannot put the ring above the disc it surrounds.
func ringToy(seed uint64, bags int) *mil.Dataset {
	r := rand.New(rand.NewPCG(seed, 5))
	ds := &mil.Dataset{Name: "ring", Classes: []string{"positive"}, Dim: 2}
	for i := range bags {
		b := mil.Bag{Labels: []int{}}
		if i%2 == 0 {
			b.Labels = []int{0}
		}
		m := 2 + r.IntN(4)
		for j := range m {
			x := []float64{0.5 * r.NormFloat64(), 0.5 * r.NormFloat64()}
			if j == 0 && i%2 == 0 {
				a := 2 * math.Pi * r.Float64()
				rad := 3 + 0.2*r.NormFloat64()
				x = []float64{rad * math.Cos(a), rad * math.Sin(a)}
			}
			b.Instances = append(b.Instances, x)
		}
		ds.Bags = append(ds.Bags, b)
	}
	return ds
}

// TestKernelSeparatesWhatLinearCannot: on the ring toy the linear MI-SVM
// and mi-SVM stay near chance, the RBF and quadratic ones (and the default,
// which is RBF here) classify held-out bags. It catches a kernel path that
// silently trains the linear model, and kernel scores that do not reach the
// served model.
func TestKernelSeparatesWhatLinearCannot(t *testing.T) {
	train, test := ringToy(1, 80), ringToy(2, 200)
	for _, k := range []models.Kind{MISVMKind(), MiSVMKind()} {
		for _, tc := range []struct {
			p        models.Params
			min, max float64
		}{
			{models.Params{"kernel": "linear"}, 0, 0.75},
			{models.Params{"kernel": "rbf"}, 0.9, 1},
			{models.Params{"kernel": "rbf", "select": "none"}, 0.9, 1},
			{models.Params{"kernel": "poly", "degree": "2"}, 0.9, 1},
			{models.Params{}, 0.9, 1},
		} {
			m, err := k.Fit(context.Background(), train, models.FitOptions{Seed: 1, Params: tc.p})
			if err != nil {
				t.Fatalf("%s %v: %v", k.Name, tc.p, err)
			}
			acc := bagAccuracy(t, m, test)
			t.Logf("%s %v: held-out bag accuracy %.3f", k.Name, tc.p, acc)
			if acc < tc.min || acc > tc.max {
				t.Errorf("%s %v: accuracy %.3f, want in [%.2f, %.2f]", k.Name, tc.p, acc, tc.min, tc.max)
			}
		}
	}
}

// TestKernelScoresMatchServedModel: the scores the relabeling rounds use
// (kernel-matrix rows) equal the served scorer's on the same instances, for
// both kernels. It catches a training kernel that differs from the one
// ovr.Scorer applies at annotation time (width, degree, constant).
func TestKernelScoresMatchServedModel(t *testing.T) {
	ds := ringToy(3, 30)
	data, err := ovr.Prepare(ds, ovr.ScaleZScore)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []models.Params{{"kernel": "rbf", "gamma": "0.7"}, {"kernel": "poly", "degree": "3", "coef0": "0.5"}, {"kernel": "rbf"}} {
		cfg, err := ParseParams(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg = cfg.resolve(len(data.Rows))
		kd, err := newKernelData(cfg, data.Rows)
		if err != nil {
			t.Fatal(err)
		}
		pos := data.Positive(0)
		var ex []example
		for i, b := range data.Bags {
			for j, g := range b {
				ex = append(ex, example{g, pos[i] && j == 0})
			}
		}
		l := &kernelLearner{k: kd}
		score, obj, err := l.train(context.Background(), ex)
		if err != nil {
			t.Fatal(err)
		}
		if !(obj >= 0) || math.IsInf(obj, 0) {
			t.Errorf("%v: objective %v", p, obj)
		}
		sc := l.scorer()
		for row, x := range data.Rows {
			if a, b := score(row), sc.Score(x); math.Abs(a-b) > 1e-9*max(1, math.Abs(a)) {
				t.Fatalf("%v: row %d: training score %v, served %v", p, row, a, b)
			}
		}
	}
}

// TestGammaScale: the width rule is 1/(d·Var) over all entries, so 1/d on
// z-scored rows; it catches a per-feature or biased variance.
func TestGammaScale(t *testing.T) {
	rows := [][]float64{{1, 3}, {-1, -3}, {1, -3}, {-1, 3}}
	// Entries ±1 and ±3: mean 0, variance (1+9)/2 = 5.
	if got, want := GammaScale(rows), 1/(2*5.0); math.Abs(got-want) > 1e-15 {
		t.Errorf("GammaScale = %v, want %v", got, want)
	}
	if got := GammaScale([][]float64{{2, 2}, {2, 2}}); got != 1 {
		t.Errorf("constant rows: GammaScale = %v, want the fallback 1", got)
	}
}

// TestResolveDefaults: kernel=auto is RBF up to gram_limit instances and
// linear beyond, and each kernel gets its own init, restarts and select
// defaults unless given. It catches a default that silently switches the
// linear Table IV protocol (three random starts, no selection).
func TestResolveDefaults(t *testing.T) {
	tests := []struct {
		p        models.Params
		n        int
		kernel   string
		init     string
		restarts int
		sel      string
	}{
		{models.Params{}, 500, KernelRBF, "bag", 1, "cv"},
		{models.Params{"gram_limit": "100"}, 500, KernelLinear, "random", 3, "none"},
		{models.Params{"kernel": "linear"}, 500, KernelLinear, "random", 3, "none"},
		{models.Params{"kernel": "poly", "restarts": "2", "init": "random", "select": "none"}, 500, KernelPoly, "random", 2, "none"},
		{models.Params{"kernel": "linear", "select": "cv", "restarts": "1"}, 500, KernelLinear, "random", 1, "cv"},
	}
	for _, tc := range tests {
		cfg, err := ParseParams(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		c := cfg.resolve(tc.n)
		if c.Kernel != tc.kernel || c.Init != tc.init || c.Restarts != tc.restarts || c.Select != tc.sel {
			t.Errorf("%v n=%d: kernel %s init %s restarts %d select %s, want %s %s %d %s",
				tc.p, tc.n, c.Kernel, c.Init, c.Restarts, c.Select, tc.kernel, tc.init, tc.restarts, tc.sel)
		}
	}
}

// TestSelectKeepsExplicitValues: select=cv searches only what is not
// given; with C and gamma both given, the model uses them. It catches a
// search that overrides the user's parameters.
func TestSelectKeepsExplicitValues(t *testing.T) {
	m, err := MISVMKind().Fit(context.Background(), ringToy(1, 40), models.FitOptions{Seed: 1,
		Params: models.Params{"kernel": "rbf", "select": "cv", "C": "50", "gamma": "0.3"}})
	if err != nil {
		t.Fatal(err)
	}
	if g := m.(*ovr.Model).State().Scorers[0].Gamma; g != 0.3 {
		t.Errorf("gamma %v, want the given 0.3", g)
	}
}

// TestGramLimit: an explicit kernel on more instances than gram_limit is
// refused with a message, not an out-of-memory kill.
func TestGramLimit(t *testing.T) {
	_, err := MISVMKind().Fit(context.Background(), ringToy(1, 40), models.FitOptions{Seed: 1,
		Params: models.Params{"kernel": "rbf", "gram_limit": "10"}})
	if err == nil {
		t.Fatal("fit beyond gram_limit accepted")
	}
}

// TestPairBaseMatchesBase: every entry of the pair matrix (ovr.Blocks'
// rows of four, AVX2 where the CPU has it) is base's one-at-a-time float
// for that pair, on both sides of the diagonal, for rbf and poly, row
// counts that leave partial blocks, and Musk1's 166 features; the kernel
// matrices and so every kernel model are those of the loop it replaced.
func TestPairBaseMatchesBase(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	for _, kernel := range []string{KernelRBF, KernelPoly} {
		for _, n := range []int{1, 2, 5, 8, 11, 30} {
			for _, d := range []int{1, 3, 166} {
				rows := make([][]float64, n)
				for i := range rows {
					rows[i] = make([]float64, d)
					for k := range rows[i] {
						rows[i][k] = r.NormFloat64() * math.Exp(2*r.NormFloat64())
					}
				}
				cfg := Config{Kernel: kernel}
				m := pairBase(cfg, rows)
				for i := range n {
					for j := range n {
						if want := base(cfg, rows[i], rows[j]); math.Float64bits(m[i*n+j]) != math.Float64bits(want) {
							t.Fatalf("%s n=%d d=%d: entry (%d, %d) %v, base %v", kernel, n, d, i, j, m[i*n+j], want)
						}
					}
				}
			}
		}
	}
}

// TestKernelMatrixMatchesKernel: every entry of a kernel matrix (RBF
// through ovr.ExpScaled, four at a time) is kernel's float for its pair,
// the formula the served scorer applies, for rbf at three widths and poly.
func TestKernelMatrixMatchesKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 3))
	rows := make([][]float64, 37)
	for i := range rows {
		rows[i] = make([]float64, 7)
		for k := range rows[i] {
			rows[i][k] = 3 * r.NormFloat64()
		}
	}
	for _, cfg := range []Config{
		{Kernel: KernelRBF, Gamma: 0.01, GramLimit: 100},
		{Kernel: KernelRBF, Gamma: 1, GramLimit: 100},
		{Kernel: KernelRBF, Gamma: 40, GramLimit: 100},
		{Kernel: KernelPoly, Gamma: 0.2, Degree: 3, Coef0: 1, GramLimit: 100},
	} {
		k, err := newKernelData(cfg, rows)
		if err != nil {
			t.Fatal(err)
		}
		n := len(rows)
		for i := range n {
			for j := range n {
				if got, want := k.gram.At(i, j), k.kernel(base(cfg, rows[i], rows[j])); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("%s gamma %v: K[%d][%d] = %v, kernel %v", cfg.Kernel, cfg.Gamma, i, j, got, want)
				}
			}
		}
	}
}

// TestScoreAllMatchesRows: a round's scores computed for every row at once
// (scoreAll: one AXPY per support vector along its row of K) are the
// per-row sums float for float, and so is the primal objective that ranks
// restarts: the relabeling and the choice of restart do not depend on
// which way the scores were made.
func TestScoreAllMatchesRows(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 8))
	rows := make([][]float64, 53)
	for i := range rows {
		rows[i] = make([]float64, 5)
		for k := range rows[i] {
			rows[i][k] = r.NormFloat64()
		}
	}
	for _, cfg := range []Config{
		{Kernel: KernelRBF, Gamma: 0.3, C: 100, GramLimit: 100},
		{Kernel: KernelPoly, Gamma: 0.2, Degree: 2, Coef0: 1, C: 10, GramLimit: 100},
	} {
		k, err := newKernelData(cfg, rows)
		if err != nil {
			t.Fatal(err)
		}
		// Every other row an example, labeled by its first feature.
		var ex []example
		for i := 0; i < len(rows); i += 2 {
			ex = append(ex, example{row: i, pos: rows[i][0] > 0})
		}
		var scores [2][]float64
		var objs [2]float64
		for s, all := range []bool{false, true} {
			l := &kernelLearner{k: k, scoreAll: all}
			score, obj, err := l.train(context.Background(), ex)
			if err != nil {
				t.Fatal(err)
			}
			for i := range rows {
				scores[s] = append(scores[s], score(i))
			}
			objs[s] = obj
		}
		for i := range rows {
			if math.Float64bits(scores[0][i]) != math.Float64bits(scores[1][i]) {
				t.Fatalf("%s: row %d scores %v one by one, %v all at once", cfg.Kernel, i, scores[0][i], scores[1][i])
			}
		}
		if objs[0] != objs[1] || objs[0] == 0 {
			t.Fatalf("%s: objective %v one by one, %v all at once", cfg.Kernel, objs[0], objs[1])
		}
	}
}

// base is the gamma-free part of the kernel between a and b, one pair at a
// time: the reference pairBase's entries must equal.
// ‖a − b‖² and ‖b − a‖² are the same float: a − b rounds to the negation
// of b − a.
func base(cfg Config, a, b []float64) float64 {
	if cfg.Kernel == KernelPoly {
		return dot(a, b)
	}
	d := 0.0
	for j, v := range a {
		e := v - b[j]
		d += e * e
	}
	return d
}

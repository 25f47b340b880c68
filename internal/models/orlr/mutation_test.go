package orlr

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/softmax"
)

// logSpaceReference runs the log-space forward algorithm (the fallback) on
// the scaled probabilities bagPosteriorsOpt prepared in s, and returns the
// full log-likelihood (with the per-instance scaling added back) and the
// posteriors: the reference the linear-domain programmes must agree with.
func logSpaceReference(t *testing.T, s *bagScratch, z [][]float64, labels []int, opt int) (float64, [][]float64) {
	t.Helper()
	n, k := len(z), len(labels)
	ll := 0.0
	for _, zi := range z {
		ys := make([]float64, k)
		for j, c := range labels {
			ys[j] = zi[c]
		}
		ll += logSumExp(ys) - logSumExp(zi)
	}
	d := newDPWork(k)
	d.opt = opt
	post := newPost(n, k)
	l, err := d.logForward(s.lq[:n], post)
	if err != nil {
		t.Fatal(err)
	}
	return ll + l, post
}

// peakedBag is an ordinary bag whose scaled likelihood is far below 1e-3
// (every instance prefers the first of four labels by e^8): the linear
// programmes must still take it. Catches a minUsable raised from 1e-250 to
// a "safe-looking" 1e-3, which would send such bags to the O(n²) path.
func peakedBag() ([][]float64, []int) {
	z := make([][]float64, 5)
	for i := range z {
		z[i] = []float64{8, 0, 0, 0, 0.5}
	}
	return z, []int{0, 1, 2, 3}
}

// TestFastEStepTakenAndAgreesWithLogSpace: on ordinary bags (random
// logits, a peaked bag, a 60-instance bag, with and without an optional
// class) both linear programmes must run without falling back to log
// space, and give the log-space programme's likelihood and posteriors.
// Before the fallback counter, a fast path that was broken (a usability
// check negated, a forward-substitution loop off by one) or never taken
// was invisible: the fallback silently produced correct posteriors.
func TestFastEStepTakenAndAgreesWithLogSpace(t *testing.T) {
	type bag struct {
		name   string
		z      [][]float64
		labels []int
		opt    int
	}
	var bags []bag
	rng := rand.New(rand.NewPCG(18, 1))
	for trial := range 120 {
		n := 1 + rng.IntN(7)
		withOpt := trial%4 == 3
		k := 1 + rng.IntN(min(n, 4))
		if withOpt {
			// The optional class needs no instance: k may exceed n by one,
			// as for a one-instance bag with the unknown class appended
			// (the log-space programme then meets unions of -Inf only).
			k = 2 + rng.IntN(min(n, 3))
		}
		classes := k + rng.IntN(3)
		labels := sortedCopy(rng.Perm(classes)[:k])
		opt := 0
		if withOpt {
			opt = 1 << (k - 1) // the last class optional, as the unknown class is
		}
		scale := []float64{0.5, 2, 6}[trial%3]
		bags = append(bags, bag{fmt.Sprintf("random%d/n=%d/k=%d/opt=%b", trial, n, k, opt), randomBag(rng, n, classes, scale), labels, opt})
	}
	pz, pl := peakedBag()
	bags = append(bags, bag{"peaked", pz, pl, 0}, bag{"peaked/opt", pz, pl, 1 << 3})
	long := randomBag(rng, 60, 6, 1)
	bags = append(bags, bag{"sixty", long, []int{0, 2, 5}, 0})
	for _, b := range bags {
		for _, alg := range []Algorithm{FAS, Forward} {
			name := b.name + "/" + string(alg)
			s := newBagScratch()
			k := len(b.labels)
			post := newPost(len(b.z), k)
			ll, err := bagPosteriorsOpt(s, alg, b.z, b.labels, b.opt, post)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if f := s.dp(k).fallbacks; f != 0 {
				t.Fatalf("%s: %d fallbacks to log space on an ordinary bag", name, f)
			}
			wantLL, wantPost := logSpaceReference(t, s, b.z, b.labels, b.opt)
			// Written as !(≤) so that a NaN on either side fails.
			if !(math.Abs(ll-wantLL) <= 1e-9*math.Max(1, math.Abs(wantLL))) {
				t.Errorf("%s: log p(Y|X) = %.12f, log space %.12f", name, ll, wantLL)
			}
			for i := range post {
				for j := range post[i] {
					if !(math.Abs(post[i][j]-wantPost[i][j]) <= 1e-9) {
						t.Errorf("%s: posterior[%d][%d] = %.12f, log space %.12f", name, i, j, post[i][j], wantPost[i][j])
					}
				}
			}
		}
	}
	// The peaked bag is the case it claims to be.
	s := newBagScratch()
	if _, err := bagPosteriors(s, FAS, pz, pl, newPost(len(pz), len(pl))); err != nil {
		t.Fatal(err)
	}
	d := s.dp(len(pl))
	if like := d.mass(d.u); !(like < 1e-3 && like > minUsable) {
		t.Fatalf("peaked bag's scaled likelihood %v is not in (minUsable, 1e-3)", like)
	}
}

// TestFallbackWhenItHappens: the log-space programme takes over exactly
// when the linear one cannot represent the bag, and agrees with it. Two
// cases: a label every instance gives probability e^-800 (the likelihood
// underflows, both programmes fall back), and one instance with a zero
// probability for a class although the bag is ordinary (FAS's forward
// substitution divides by a zero diagonal there and must fall back; the
// forward algorithm has no division and must not). Catches a fallback that
// is skipped (a NaN or an error returned instead) or taken for the wrong
// programme.
func TestFallbackWhenItHappens(t *testing.T) {
	cases := []struct {
		name   string
		z      [][]float64
		labels []int
		want   map[Algorithm]int // fallbacks expected
	}{
		{"impossible label", [][]float64{{0, -800, 1}, {2, -900, 0}, {0, -750, 0}}, []int{0, 1, 2},
			map[Algorithm]int{FAS: 1, Forward: 1}},
		{"zero diagonal", [][]float64{{0, -800}, {0, 0}}, []int{0, 1},
			map[Algorithm]int{FAS: 1, Forward: 0}},
	}
	for _, tc := range cases {
		for _, alg := range []Algorithm{FAS, Forward} {
			name := tc.name + "/" + string(alg)
			s := newBagScratch()
			k := len(tc.labels)
			post := newPost(len(tc.z), k)
			ll, err := bagPosteriors(s, alg, tc.z, tc.labels, post)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := s.dp(k).fallbacks; got != tc.want[alg] {
				t.Errorf("%s: %d fallbacks, want %d", name, got, tc.want[alg])
			}
			wantLL, wantPost := logSpaceReference(t, s, tc.z, tc.labels, 0)
			if math.IsNaN(ll) || math.Abs(ll-wantLL) > 1e-9*math.Max(1, math.Abs(wantLL)) {
				t.Errorf("%s: log p(Y|X) = %v, log space %v", name, ll, wantLL)
			}
			for i := range post {
				for j := range post[i] {
					if !(math.Abs(post[i][j]-wantPost[i][j]) <= 1e-9) {
						t.Errorf("%s: posterior[%d][%d] = %v, log space %v", name, i, j, post[i][j], wantPost[i][j])
					}
				}
			}
		}
	}
	// The zero-diagonal bag, by hand: the bag label is every class, so the
	// per-instance factors are 1; instance 0 is class 0 (class 1 has
	// e^-800, zero in float64), so instance 1 must be class 1, which it is
	// with probability ½: log p = log ½, posteriors 0→0 and 1→1.
	post := newPost(2, 2)
	ll, err := bagPosteriors(newBagScratch(), FAS, [][]float64{{0, -800}, {0, 0}}, []int{0, 1}, post)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ll-math.Log(0.5)) > 1e-12 || math.Abs(post[0][0]-1) > 1e-12 || math.Abs(post[1][1]-1) > 1e-12 {
		t.Errorf("zero-diagonal bag: log p %v (want log ½), posteriors %v (want instance 0 → class 0, 1 → 1)", ll, post)
	}
}

// surjections returns the number of maps from n instances onto k labels.
func surjections(n, k int) float64 {
	s := 0.0
	binom := 1.0
	for j := 0; j <= k; j++ {
		s += math.Pow(-1, float64(j)) * binom * math.Pow(float64(k-j), float64(n))
		binom = binom * float64(k-j) / float64(j+1)
	}
	return s
}

// emFixture builds an EM state over bags of the given sizes and labels
// (3 classes, 2 features) with zero weights, where every instance gives
// every class probability ⅓: p(Y_b|X_b) = surj(n_b, k_b) / 3^n_b and every
// posterior is 1/k_b, in closed form. The targets start as NaN, so a row
// the E-step does not write stays visible.
func emFixture(t *testing.T, sizes []int, labels [][]int, workers int) *emState {
	t.Helper()
	const nc, dim = 3, 2
	rng := rand.New(rand.NewPCG(5, 8))
	var xs [][]float64
	var tb []trainBag
	for b, n := range sizes {
		tb = append(tb, trainBag{start: len(xs), n: n, labels: labels[b]})
		for range n {
			xs = append(xs, []float64{rng.NormFloat64(), rng.NormFloat64()})
		}
	}
	prob, err := softmax.NewProblem(nc, dim, xs, nil, 0, workers)
	if err != nil {
		t.Fatal(err)
	}
	for i := range prob.T {
		prob.T[i] = math.NaN()
	}
	return &emState{cfg: DefaultConfig(), prob: prob, bags: tb, lr: softmax.New(nc, dim), workers: workers}
}

// TestEStepVisitsEveryActiveBag: the E-step's log-likelihood is the sum
// over every active bag, and it writes the posteriors of every active bag
// and no other, for any number of workers. Catches a work-sharing counter
// that starts past the first bags (next.Add(1)+1), a bound that stops one
// bag early, a skipped clear of the target row, and a lost per-bag
// log-likelihood.
func TestEStepVisitsEveryActiveBag(t *testing.T) {
	sizes := []int{1, 2, 3, 4, 2, 5, 3}
	labels := [][]int{{2}, {0, 1}, {0, 1, 2}, {1}, {0, 2}, {0, 1, 2}, {1, 2}}
	for _, active := range [][]int{{0, 1, 2, 3, 4, 5, 6}, {1, 2, 5}, {0}, {6}} {
		for _, workers := range []int{1, 2, 3, 16} {
			name := fmt.Sprintf("active%v/workers=%d", active, workers)
			em := emFixture(t, sizes, labels, workers)
			ll, err := em.eStep(context.Background(), active)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want := 0.0
			for _, a := range active {
				want += math.Log(surjections(sizes[a], len(labels[a])) / math.Pow(3, float64(sizes[a])))
			}
			if math.Abs(ll-want) > 1e-9*math.Abs(want) {
				t.Errorf("%s: log-likelihood %.12f, closed form %.12f", name, ll, want)
			}
			if got, wantRows := em.rows(active), 0; true {
				for _, a := range active {
					wantRows += sizes[a]
				}
				if got != wantRows {
					t.Errorf("%s: rows %d, want %d", name, got, wantRows)
				}
			}
			for b, tb := range em.bags {
				isActive := slices.Contains(active, b)
				for i := range tb.n {
					row := em.prob.T[(tb.start+i)*3 : (tb.start+i+1)*3]
					for c, v := range row {
						want := math.NaN()
						if isActive {
							want = 0
							if slices.Contains(labels[b], c) {
								want = 1 / float64(len(labels[b]))
							}
						}
						if !(math.Abs(v-want) < 1e-12) && !(math.IsNaN(v) && math.IsNaN(want)) {
							t.Errorf("%s: bag %d instance %d target[%d] = %v, want %v", name, b, i, c, v, want)
						}
					}
				}
			}
		}
	}
}

// TestSampleSubsetSize: the stochastic variant takes ⌈subset·n⌉ distinct
// bags (at least one), in index order, and subset 1 takes all. Catches
// subset·n computed as subset/n, a lost ceiling or lower bound, and an
// unsorted sample (the E-step's sums and the M-step's rows would then
// depend on the draw order).
func TestSampleSubsetSize(t *testing.T) {
	em := &emState{bags: make([]trainBag, 10)}
	for _, tc := range []struct {
		subset float64
		want   int
	}{{1, 10}, {0.25, 3}, {0.5, 5}, {0.01, 1}, {0.95, 10}, {0.85, 9}} {
		em.cfg.Subset = tc.subset
		rng := rand.New(rand.NewPCG(1, 2))
		seen := map[int]bool{}
		for range 50 {
			idx := em.sample(rng)
			if len(idx) != tc.want {
				t.Fatalf("subset %v of 10 bags: %d drawn, want %d", tc.subset, len(idx), tc.want)
			}
			for i, a := range idx {
				if a < 0 || a >= 10 || (i > 0 && idx[i-1] >= a) {
					t.Fatalf("subset %v: sample %v not distinct ascending bag indices", tc.subset, idx)
				}
				seen[a] = true
			}
		}
		if len(seen) != 10 {
			t.Errorf("subset %v: 50 draws visited only bags %v", tc.subset, seen)
		}
	}
}

// TestMProblemCopiesActiveRows: the stochastic M-step's problem holds
// exactly the rows (features with their bias column, and targets) of the
// active bags, in order; with every bag active it is the full problem, not
// a copy. Catches wrong slice bounds in the copy (rows of the wrong bag, a
// row too many or too few) and a wrong instance count N.
func TestMProblemCopiesActiveRows(t *testing.T) {
	sizes := []int{2, 1, 3, 2}
	labels := [][]int{{0}, {1}, {0, 2}, {2}}
	em := emFixture(t, sizes, labels, 1)
	for i := range em.prob.T {
		em.prob.T[i] = float64(i)
	}
	if em.mProblem([]int{0, 1, 2, 3}) != em.prob {
		t.Error("with every bag active the M-step must use the full problem")
	}
	active := []int{1, 2}
	sub := em.mProblem(active)
	d1 := em.lr.Dim + 1
	var wantX, wantT []float64
	for _, a := range active {
		b := em.bags[a]
		wantX = append(wantX, em.prob.X[b.start*d1:(b.start+b.n)*d1]...)
		wantT = append(wantT, em.prob.T[b.start*3:(b.start+b.n)*3]...)
	}
	// Hand-computed: bags 1 and 2 are rows 2..5 of the design matrix.
	if !slices.Equal(wantX, em.prob.X[2*d1:6*d1]) {
		t.Fatal("fixture: bags 1 and 2 are not rows 2..5")
	}
	if sub.N != 4 || !slices.Equal(sub.X, wantX) || !slices.Equal(sub.T, wantT) {
		t.Errorf("sub-problem N=%d X=%v T=%v; want N=4 X=%v T=%v", sub.N, sub.X, sub.T, wantX, wantT)
	}
	if sub.Classes != 3 || sub.Dim != 2 || sub.L2 != em.prob.L2 {
		t.Errorf("sub-problem shape %d×%d l2 %v", sub.Classes, sub.Dim, sub.L2)
	}
}

// pruneDataset: four labeled bags whose pruning costs n·k·2^k are, by
// hand: A (7 instances, 1 label) 14, B (2, 2) 16, C (3, 2) 24, D (1, 1) 2;
// with the unknown class (k+1): A 56, B 48, C 72, D 8.
func pruneDataset() *mil.Dataset {
	inst := func(n int) [][]float64 {
		x := make([][]float64, n)
		for i := range x {
			x[i] = []float64{float64(i)}
		}
		return x
	}
	return &mil.Dataset{Classes: []string{"a", "b"}, Dim: 1, Bags: []mil.Bag{
		{ID: "A", Instances: inst(7), Labels: []int{0}},
		{ID: "B", Instances: inst(2), Labels: []int{0, 1}},
		{ID: "C", Instances: inst(3), Labels: []int{0, 1}},
		{ID: "D", Instances: inst(1), Labels: []int{1}},
	}}
}

// TestPruneCostHandComputed: prune=0.5 drops the two most expensive bags by
// n·k·2^k, counting the unknown class in k when the model has one, and
// keeps the rest in their original order. Catches the cost's ·k turned
// into /k (then C and A go), the 2^k factor dropped (C and A go too), the
// unknown class left out of k (B and C go instead of A and C), the dropped
// count floor(prune·n) miscomputed, and an unsorted result.
func TestPruneCostHandComputed(t *testing.T) {
	for _, tc := range []struct {
		unknown bool
		prune   float64
		want    []string
	}{
		{false, 0.5, []string{"A", "D"}},
		{true, 0.5, []string{"B", "D"}},
		{false, 0.25, []string{"A", "B", "D"}},
		{true, 0.25, []string{"A", "B", "D"}},
		{false, 0.74, []string{"A", "D"}}, // floor(2.96) = 2 dropped, not 3
		{false, 0.8, []string{"D"}},
	} {
		cfg := DefaultConfig()
		cfg.Unknown, cfg.Prune = tc.unknown, tc.prune
		bags, err := selectBags(pruneDataset(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range bags {
			got = append(got, b.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("unknown=%v prune=%v: kept %v, want %v", tc.unknown, tc.prune, got, tc.want)
		}
	}
}

// TestMoreLabelsThanInstances: n instances carry at most n classes, so a
// bag with more labels than instances has probability zero and is skipped
// (with a warning), while a bag with exactly as many labels as instances is
// kept; a data set of only such bags has nothing to train on. Catches the
// comparison made non-strict (valid n = k bags dropped) or the skip removed
// (the E-step then fails on a zero-probability bag).
func TestMoreLabelsThanInstances(t *testing.T) {
	d := &mil.Dataset{Classes: []string{"a", "b", "c"}, Dim: 1, Bags: []mil.Bag{
		{ID: "over", Instances: [][]float64{{1}}, Labels: []int{0, 1}},
		{ID: "equal", Instances: [][]float64{{1}, {2}}, Labels: []int{0, 1}},
		{ID: "under", Instances: [][]float64{{1}, {2}, {3}}, Labels: []int{2}},
		{ID: "over3", Instances: [][]float64{{1}, {2}}, Labels: []int{0, 1, 2}},
	}}
	bags, err := selectBags(d, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range bags {
		got = append(got, b.ID)
	}
	if !slices.Equal(got, []string{"equal", "under"}) {
		t.Errorf("kept %v, want [equal under]", got)
	}
	// The fit goes through: the skipped bags never reach the E-step.
	if _, err := Fit(context.Background(), d, models.FitOptions{Params: models.Params{"iters": "2"}}); err != nil {
		t.Errorf("fit with an impossible bag: %v", err)
	}
	only := &mil.Dataset{Classes: d.Classes, Dim: 1, Bags: []mil.Bag{d.Bags[0], d.Bags[3]}}
	if _, err := Fit(context.Background(), only, models.FitOptions{}); !errors.Is(err, models.ErrBadInput) {
		t.Errorf("fit with only impossible bags: err = %v, want ErrBadInput", err)
	}
}

// TestImpossibleBagIsAnError: a bag with more required labels than
// instances has probability zero even in log space; every programme must
// report it as an error, never return -Inf with NaN posteriors that would
// poison the M-step. Catches the zero-probability check of the log-space
// programme testing for +Inf instead of -Inf.
func TestImpossibleBagIsAnError(t *testing.T) {
	for _, alg := range []Algorithm{FAS, Forward} {
		z := [][]float64{{0.3, -0.2, 0.1}}
		ll, err := bagPosteriors(newBagScratch(), alg, z, []int{0, 2}, newPost(1, 2))
		if err == nil {
			t.Errorf("%s: a one-instance bag with two labels gave log p = %v and no error", alg, ll)
		}
	}
}

// TestFitRejectsZeroDimension: a data set of dimension 0 is refused up
// front with an error naming it. Catches the check relaxed to dim < 0
// (mil.Bag.Validate does not check lengths for dimension 0, so the fit
// would go on with features it cannot place).
func TestFitRejectsZeroDimension(t *testing.T) {
	d := &mil.Dataset{Classes: []string{"a", "b"}, Dim: 0, Bags: []mil.Bag{
		{ID: "x", Instances: [][]float64{{1, 2}}, Labels: []int{0}},
	}}
	_, err := Fit(context.Background(), d, models.FitOptions{Params: models.Params{"iters": "1"}})
	if err == nil || !strings.Contains(err.Error(), "dimension 0") {
		t.Errorf("fit on a dimension-0 data set: err = %v, want one naming dimension 0", err)
	}
}

// TestToleranceStopsAtTheFirstSmallGain: with tol > 0 EM stops at the
// first iteration whose objective gain is at most tol·|objective|, not
// before and not after. Catches the relative criterion computed as
// tol/|objective| (the objective is far from ±1, so that stops at another
// iteration) and a stop that ignores the criterion on some iterations.
func TestToleranceStopsAtTheFirstSmallGain(t *testing.T) {
	d := synthetic(14, 60, 3, 2)
	const tol = 1e-3
	_, tr := fitT(t, d, models.FitOptions{Params: models.Params{"iters": "60", "tol": "1e-3"}})
	obj := tr.Objective
	if math.Abs(obj[0]) < 10 {
		t.Fatalf("fixture: objective %v too close to ±1 to tell tol·|obj| from tol/|obj|", obj[0])
	}
	stop := -1
	for i := 1; i < len(obj); i++ {
		if obj[i]-obj[i-1] <= tol*math.Abs(obj[i]) {
			stop = i
			break
		}
	}
	if stop < 0 || len(obj) != stop+1 {
		t.Errorf("ran %d iterations; the first gain within tol is at iteration %d (objectives %v)", len(obj), stop+1, obj)
	}
}

// TestUnknownClassAtIndexZero: the unknown class may be the data's first
// class (index 0). Catches index checks written as > 0 where >= 0 is
// meant: the data's "unknown" class not found (a second one appended), the
// unknown class not offered to bags at index 0, and a bag with an empty
// label refused although the unknown class makes it valid.
func TestUnknownClassAtIndexZero(t *testing.T) {
	classes := []string{UnknownClass, "a", "b"}
	got, unk := modelClasses(classes, true)
	if unk != 0 || !slices.Equal(got, classes) {
		t.Fatalf("modelClasses(%v) = %v, %d; want the same classes and 0", classes, got, unk)
	}
	labels, opt := allowedClasses([]int{2}, 0)
	if !slices.Equal(labels, []int{2, 0}) || opt != 0b10 {
		t.Errorf("allowedClasses([2], 0) = %v, %b; want [2 0], 10", labels, opt)
	}
	cfg := DefaultConfig()
	cfg.Unknown = true
	d := &mil.Dataset{Classes: classes, Dim: 1, Bags: []mil.Bag{
		{ID: "empty", Instances: [][]float64{{1}}, Labels: []int{}},
		{ID: "b", Instances: [][]float64{{2}}, Labels: []int{2}},
	}}
	bags, err := selectBags(d, cfg)
	if err != nil || len(bags) != 2 {
		t.Errorf("selectBags with unknown class 0: %d bags, %v; want both", len(bags), err)
	}
}

// TestEmptyLabelErrorNamesTheFirst: without the unknown class, empty label
// sets are one error that counts them and names the first. Catches the
// first id overwritten by later ones (empty == 0 inverted).
func TestEmptyLabelErrorNamesTheFirst(t *testing.T) {
	d := &mil.Dataset{Classes: []string{"a"}, Dim: 1, Bags: []mil.Bag{
		{ID: "ok", Instances: [][]float64{{1}}, Labels: []int{0}},
		{ID: "e1", Instances: [][]float64{{1}}, Labels: []int{}},
		{ID: "e2", Instances: [][]float64{{1}}, Labels: []int{}},
	}}
	_, err := selectBags(d, DefaultConfig())
	if !errors.Is(err, models.ErrBadInput) || !strings.Contains(err.Error(), `2 of the 3 labeled training bags (the first "e1")`) {
		t.Errorf("err = %v, want 2 of 3 with the first \"e1\"", err)
	}
}

// TestPruneTiesDropTheLaterBags: among equally expensive bags pruning drops
// the later ones, so which bags train does not depend on the sort's
// whims. Catches a non-strict comparison in the stable sort (ties then
// reorder).
func TestPruneTiesDropTheLaterBags(t *testing.T) {
	var bags []mil.Bag
	for i := range 5 {
		bags = append(bags, mil.Bag{ID: fmt.Sprint(i), Instances: [][]float64{{1}, {2}}, Labels: []int{0}})
	}
	cfg := DefaultConfig()
	cfg.Prune = 0.4
	kept, err := selectBags(&mil.Dataset{Classes: []string{"a"}, Dim: 1, Bags: bags}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range kept {
		got = append(got, b.ID)
	}
	if !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Errorf("kept %v of five equal bags, want [0 1 2]", got)
	}
}

// TestFitRejectsInvalidTrainingBags: a labeled training bag that breaks the
// bag invariants (a feature vector of the wrong length, a non-finite
// feature, a label out of range or out of order) fails the fit with
// ErrBadInput and the invariant it breaks, before any EM work. Catches the
// validation dropped from selectBags: the fit then crashes, or trains on a
// row read across two instances, or fails with an error that names no
// input fault.
func TestFitRejectsInvalidTrainingBags(t *testing.T) {
	good := mil.Bag{ID: "good", Instances: [][]float64{{1, 2}, {3, 4}}, Labels: []int{0, 1}}
	for _, tc := range []struct {
		name string
		bag  mil.Bag
		want error
	}{
		{"dimension", mil.Bag{ID: "x", Instances: [][]float64{{1, 2}, {3}}, Labels: []int{0}}, mil.ErrDimension},
		{"non-finite", mil.Bag{ID: "x", Instances: [][]float64{{1, math.Inf(1)}}, Labels: []int{0}}, mil.ErrNonFinite},
		{"label range", mil.Bag{ID: "x", Instances: [][]float64{{1, 2}}, Labels: []int{5}}, mil.ErrLabelRange},
		{"label order", mil.Bag{ID: "x", Instances: [][]float64{{1, 2}, {3, 4}}, Labels: []int{1, 0}}, mil.ErrLabelOrder},
	} {
		d := &mil.Dataset{Classes: []string{"a", "b"}, Dim: 2, Bags: []mil.Bag{good, tc.bag}}
		_, err := Fit(context.Background(), d, models.FitOptions{Params: models.Params{"iters": "1"}})
		if !errors.Is(err, models.ErrBadInput) || !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want ErrBadInput wrapping %v", tc.name, err, tc.want)
		}
	}
}

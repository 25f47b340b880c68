package misvm

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
	"github.com/mimlstream/mimlstream/internal/testsupport/miltest"
)

// binaryToy is standard-assumption MIL data: negative bags hold background
// instances only, positive bags also one instance shifted along feature 0.
func binaryToy(seed uint64, bags, d int) *mil.Dataset {
	r := rand.New(rand.NewPCG(seed, 3))
	ds := &mil.Dataset{Name: "toy", Classes: []string{"positive"}, Dim: d}
	for i := range bags {
		b := mil.Bag{Labels: []int{}}
		if i%2 == 0 {
			b.Labels = []int{0}
		}
		m := 2 + r.IntN(4)
		for j := range m {
			x := make([]float64, d)
			for k := range x {
				x[k] = r.NormFloat64()
			}
			if j == 0 && i%2 == 0 {
				x[0] += 5
			}
			b.Instances = append(b.Instances, x)
		}
		ds.Bags = append(ds.Bags, b)
	}
	return ds
}

func bagAccuracy(t *testing.T, m models.Model, ds *mil.Dataset) float64 {
	t.Helper()
	ok := 0
	for i := range ds.Bags {
		ann, err := m.Annotate(context.Background(), &ds.Bags[i], models.Inductive)
		if err != nil {
			t.Fatal(err)
		}
		if (len(ann.BagLabels) == 1) == (len(ds.Bags[i].Labels) == 1) {
			ok++
		}
	}
	return float64(ok) / float64(len(ds.Bags))
}

func TestToyAccuracy(t *testing.T) {
	train, test := binaryToy(1, 80, 4), binaryToy(2, 100, 4)
	for _, k := range []models.Kind{MISVMKind(), MiSVMKind()} {
		for _, init := range []string{"random", "bag"} {
			m, err := k.Fit(context.Background(), train, models.FitOptions{Seed: 1, Params: models.Params{"init": init}})
			if err != nil {
				t.Fatal(err)
			}
			acc := bagAccuracy(t, m, test)
			t.Logf("%s init=%s: test bag accuracy %.3f", k.Name, init, acc)
			if acc < 0.9 {
				t.Errorf("%s init=%s: accuracy %.3f, want ≥ 0.9", k.Name, init, acc)
			}
		}
	}
}

func TestDeterministicAcrossWorkers(t *testing.T) {
	train := binaryToy(1, 60, 4)
	for _, k := range []models.Kind{MISVMKind(), MiSVMKind()} {
		var states []string
		for _, w := range []int{1, 3} {
			m, err := k.Fit(context.Background(), train, models.FitOptions{Seed: 4, Workers: w})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := m.MarshalState()
			states = append(states, string(b))
		}
		if states[0] != states[1] {
			t.Errorf("%s: state depends on workers", k.Name)
		}
	}
}

func TestRoundTripAndBadInput(t *testing.T) {
	train := binaryToy(1, 40, 4)
	reg := models.NewRegistry(MISVMKind(), MiSVMKind())
	for _, k := range []models.Kind{MISVMKind(), MiSVMKind()} {
		m, err := k.Fit(context.Background(), train, models.FitOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		blob, err := models.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := reg.Decode(blob)
		if err != nil {
			t.Fatal(err)
		}
		if back.Meta().Kind != k.Name {
			t.Fatalf("decoded kind %q", back.Meta().Kind)
		}
		for i := range train.Bags {
			a1, _ := m.Annotate(context.Background(), &train.Bags[i], models.Inductive)
			a2, _ := back.Annotate(context.Background(), &train.Bags[i], models.Inductive)
			if math.Abs(a1.BagScores[0]-a2.BagScores[0]) > 1e-12 {
				t.Fatal("scores changed after round trip")
			}
		}
		bad := mil.Bag{Instances: [][]float64{{1, math.Inf(1), 0, 0}}}
		if _, err := m.Annotate(context.Background(), &bad, models.Inductive); !errors.Is(err, models.ErrBadInput) {
			t.Errorf("err = %v, want ErrBadInput", err)
		}
	}
}

// TestScaleParam: every scale mode trains a usable model, and the mode is
// the one the model applies at annotation time (stored in its state).
func TestScaleParam(t *testing.T) {
	train, test := binaryToy(1, 80, 4), binaryToy(2, 100, 4)
	for _, scale := range ovr.Scalings {
		for _, k := range []models.Kind{MISVMKind(), MiSVMKind()} {
			// The linear kernel: the bars below were measured for it, and
			// the scaler is the same object whatever the kernel.
			m, err := k.Fit(context.Background(), train, models.FitOptions{Seed: 1, Params: models.Params{"scale": string(scale), "kernel": "linear"}})
			if err != nil {
				t.Fatalf("%s scale=%s: %v", k.Name, scale, err)
			}
			if got, _ := ovr.ParseScaling(string(m.(*ovr.Model).State().Scaler.Mode)); got != scale {
				t.Errorf("%s scale=%s: model scaler mode %q", k.Name, scale, got)
			}
			acc := bagAccuracy(t, m, test)
			t.Logf("%s scale=%s: test bag accuracy %.3f", k.Name, scale, acc)
			// Unit norms discard the length of the shifted instance, which
			// carries much of the toy's signal (0.78–0.86 measured), so the
			// bar is "well above chance" (0.5), not the z-score's 0.9.
			if acc < 0.7 {
				t.Errorf("%s scale=%s: accuracy %.3f, want ≥ 0.7", k.Name, scale, acc)
			}
		}
	}
}

func TestParams(t *testing.T) {
	tests := []struct {
		p  models.Params
		ok bool
	}{
		{models.Params{}, true},
		{models.Params{"C": "10", "init": "bag", "restarts": "1"}, true},
		{models.Params{"C": "0"}, false},
		{models.Params{"init": "mean"}, false},
		{models.Params{"epoch": "3"}, false},
		{models.Params{"iters": "0"}, false},
		{models.Params{"scale": "unit"}, true},
		{models.Params{"scale": "minmax", "C": "1"}, true},
		{models.Params{"scale": "l2"}, false},
		{models.Params{"kernel": "rbf", "gamma": "0.5", "select": "none"}, true},
		{models.Params{"kernel": "poly", "degree": "2", "coef0": "0"}, true},
		{models.Params{"kernel": "sigmoid"}, false},
		{models.Params{"gamma": "-1"}, false},
		{models.Params{"degree": "0"}, false},
		{models.Params{"degree": "11"}, false},
		{models.Params{"tol": "0"}, false},
		{models.Params{"gram_limit": "0"}, false},
		{models.Params{"select": "grid"}, false},
		{models.Params{"coef0": "NaN"}, false},
	}
	for _, tc := range tests {
		if _, err := ParseParams(tc.p); (err == nil) != tc.ok {
			t.Errorf("%v: err = %v, want ok=%v", tc.p, err, tc.ok)
		}
	}
}

// TestReproduce is the Table IV baseline reproduction, skipped unless
// MIL_REPRO is set (see package miltest); MIL_KIND selects misvm or mi-svm.
func TestReproduce(t *testing.T) {
	k := MISVMKind()
	if os.Getenv("MIL_KIND") == MiSVMName {
		k = MiSVMKind()
	}
	miltest.Reproduce(t, k, "../../..")
}

package orlr

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/modeltest"
	"github.com/mimlstream/mimlstream/internal/testsupport/synth"
)

// TestScaleInvariance fits on overlapping synthetic classes and on the same
// data with every feature multiplied by 1e4 and shifted: with the default
// z-score the held-out instance accuracies agree within noise; with
// scale=none the rescaled fit is visibly worse (what the option prevents).
func TestScaleInvariance(t *testing.T) {
	g := synth.Blobs{Bags: 300, Classes: 5, Dim: 4, MaxInstances: 5, CentreScale: 1.2}
	d := g.Generate(rand.New(rand.NewPCG(31, 1)))
	big := modeltest.Rescaled(d)
	train, test := modeltest.Seq(0, 200), modeltest.Seq(200, 300)
	for _, mstep := range []string{MStepLBFGS, MStepGD} {
		acc := func(data *mil.Dataset, scale string) float64 {
			m, _ := fitT(t, data.Subset(train), models.FitOptions{Seed: 1,
				Params: models.Params{"iters": "20", "mstep": mstep, "scale": scale}})
			return modeltest.InductiveAccuracy(t, m, data.Subset(test).Bags)
		}
		raw, scaled, none := acc(d, "zscore"), acc(big, "zscore"), acc(big, "none")
		t.Logf("mstep=%s: accuracy %.3f raw, %.3f rescaled (zscore), %.3f rescaled (none)", mstep, raw, scaled, none)
		if raw < 0.6 {
			t.Fatalf("mstep=%s: accuracy %.3f on the raw data: the task is too hard to compare", mstep, raw)
		}
		if math.Abs(raw-scaled) > 0.02 {
			t.Errorf("mstep=%s: accuracy %.3f raw vs %.3f rescaled with z-scoring", mstep, raw, scaled)
		}
		if none > scaled-0.1 {
			t.Errorf("mstep=%s: scale=none reaches %.3f on the rescaled data (zscore %.3f): the test does not show the transform", mstep, none, scaled)
		}
	}
}

// TestOldStateDecodesUnchanged decodes models serialized before feature
// scaling existed (testdata/v1_*.json, written by the code of commit
// 3530602) and checks that they annotate exactly as they did then: no
// scaler, scale=none, and the same kernel feature-space identifier.
func TestOldStateDecodesUnchanged(t *testing.T) {
	reg := models.NewRegistry(Kind())
	for _, tc := range []struct{ file, space string }{
		{"testdata/v1_linear.json", ""},
		{"testdata/v1_rbf.json", "rbf-1fcbe929447e19b4b1fc9e27"},
	} {
		raw, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Model     json.RawMessage
			Bags      []mil.Bag
			Inductive []models.Annotation
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		mm, err := reg.Decode(f.Model)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		m := mm.(*Model)
		if m.scaler != nil || m.Config().Scale != "none" {
			t.Errorf("%s: scaler %v, scale %q; want none", tc.file, m.scaler, m.Config().Scale)
		}
		if got := m.FeatureSpace(); got != tc.space {
			t.Errorf("%s: feature space %q, want %q", tc.file, got, tc.space)
		}
		for i := range f.Bags {
			a, err := m.Annotate(context.Background(), &f.Bags[i], models.Inductive)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, f.Inductive[i]) {
				t.Errorf("%s bag %d: annotation %+v, recorded %+v", tc.file, i, a, f.Inductive[i])
			}
		}
		// Re-encoding keeps the old meaning.
		blob, err := models.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := reg.Decode(blob)
		if err != nil {
			t.Fatal(err)
		}
		if back.(*Model).Config() != m.Config() {
			t.Errorf("%s: config %+v after re-encoding, want %+v", tc.file, back.(*Model).Config(), m.Config())
		}
	}
}

// TestScalerStoredAndApplied checks that a fitted model carries its
// transform and applies it to raw instances: MapInstance of the linear model
// is the z-scored instance.
func TestScalerStoredAndApplied(t *testing.T) {
	d := modeltest.Rescaled(synthetic(32, 40, 3, 2))
	m, _ := fitT(t, d, models.FitOptions{Seed: 1, Params: models.Params{"iters": "3"}})
	if m.scaler == nil || m.Config().Scale != "zscore" {
		t.Fatalf("default fit has scaler %v, scale %q", m.scaler, m.Config().Scale)
	}
	var xs [][]float64
	for _, b := range d.Bags {
		xs = append(xs, b.Instances...)
	}
	for j := range d.Dim {
		mean, ss := 0.0, 0.0
		for _, x := range xs {
			mean += x[j]
		}
		mean /= float64(len(xs))
		for _, x := range xs {
			ss += (x[j] - mean) * (x[j] - mean)
		}
		sd := math.Sqrt(ss / float64(len(xs)))
		z, err := m.MapInstance(xs[0])
		if err != nil {
			t.Fatal(err)
		}
		if want := (xs[0][j] - mean) / sd; math.Abs(z[j]-want) > 1e-9 {
			t.Errorf("feature %d maps to %v, want the z-score %v", j, z[j], want)
		}
	}
	none, _ := fitT(t, d, models.FitOptions{Seed: 1, Params: models.Params{"iters": "3", "scale": "none"}})
	if z, _ := none.MapInstance(xs[0]); !reflect.DeepEqual(z, xs[0]) || none.scaler != nil {
		t.Errorf("scale=none maps %v to %v", xs[0], z)
	}
	if _, err := ParseConfig(models.Params{"scale": "log"}); err == nil {
		t.Error("scale=log accepted")
	}
	if _, err := ParseConfig(models.Params{"scale": ""}); err == nil {
		t.Error("scale= (empty) accepted")
	}
}

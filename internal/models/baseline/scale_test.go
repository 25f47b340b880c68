package baseline

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

// TestSLRScaleInvariance: with the default z-score, SLR on features
// multiplied by 1e4 and shifted is as accurate on held-out bags as on the
// original features.
func TestSLRScaleInvariance(t *testing.T) {
	g := synth.Blobs{Bags: 300, Classes: 5, Dim: 4, MaxInstances: 5, CentreScale: 1.2}
	d := g.Generate(rand.New(rand.NewPCG(31, 1)))
	big := modeltest.Rescaled(d)
	train, test := modeltest.Seq(0, 200), modeltest.Seq(200, 300)
	acc := func(data *mil.Dataset, scale string) float64 {
		m, err := FitSLR(context.Background(), data.Subset(train), models.FitOptions{Params: models.Params{"scale": scale}})
		if err != nil {
			t.Fatal(err)
		}
		return modeltest.InductiveAccuracy(t, m, data.Subset(test).Bags)
	}
	raw, scaled, none := acc(d, "zscore"), acc(big, "zscore"), acc(big, "none")
	t.Logf("accuracy %.3f raw, %.3f rescaled (zscore), %.3f rescaled (none)", raw, scaled, none)
	if raw < 0.6 {
		t.Fatalf("accuracy %.3f on the raw data: too hard to compare", raw)
	}
	if math.Abs(raw-scaled) > 0.02 {
		t.Errorf("accuracy %.3f raw vs %.3f rescaled", raw, scaled)
	}
	if _, err := FitSLR(context.Background(), d, models.FitOptions{Params: models.Params{"scale": "log"}}); err == nil {
		t.Error("scale=log accepted")
	}
}

// TestSLROldStateDecodesUnchanged decodes an SLR serialized before feature
// scaling existed (testdata/v1_slr.json, written by the code of commit
// 3530602): it must annotate exactly as it did then.
func TestSLROldStateDecodesUnchanged(t *testing.T) {
	raw, err := os.ReadFile("testdata/v1_slr.json")
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
	m, err := models.NewRegistry(SLRKind()).Decode(f.Model)
	if err != nil {
		t.Fatal(err)
	}
	if m.(*SLR).scaler != nil {
		t.Errorf("old state decoded with a scaler")
	}
	for i := range f.Bags {
		a, err := m.Annotate(context.Background(), &f.Bags[i], models.Inductive)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, f.Inductive[i]) {
			t.Errorf("bag %d: annotation %+v, recorded %+v", i, a, f.Inductive[i])
		}
	}
	// A new model round-trips its scaler.
	fresh, err := FitSLR(context.Background(), modeltest.Rescaled(separable(5, 30, 3, 2)), models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := models.Encode(fresh)
	if err != nil {
		t.Fatal(err)
	}
	back, err := models.NewRegistry(SLRKind()).Decode(blob)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.(*SLR).scaler, fresh.scaler) || fresh.scaler == nil {
		t.Errorf("scaler %+v after decoding, want %+v", back.(*SLR).scaler, fresh.scaler)
	}
}

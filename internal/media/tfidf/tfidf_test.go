package tfidf

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/baseline"
	"github.com/mimlstream/mimlstream/internal/models/mimlca"
)

// TestIDFHandComputed: three passages; feature 1 in all three, 4 in one,
// 9 in two (one of them with a zero stored, which does not count).
// idf = ln((1+3)/(1+df)) + 1: df 3 -> 1, df 1 -> 1+ln 2, df 0 -> 1+ln 4.
func TestIDFHandComputed(t *testing.T) {
	bags := []mil.Bag{
		{Sparse: []mil.SparseVec{{Idx: []int32{1, 4, 9}, Val: []float64{1, 2, 1}}, {Idx: []int32{1, 9}, Val: []float64{1, 0}}}},
		{Sparse: []mil.SparseVec{{Idx: []int32{1, 9}, Val: []float64{3, -1}}}},
	}
	w := FitIDF(bags)
	if w.N != 3 || !reflect.DeepEqual(w.Idx, []int32{1, 4, 9}) || !reflect.DeepEqual(w.DF, []int32{3, 1, 2}) {
		t.Fatalf("IDF %+v", w)
	}
	for j, want := range map[int32]float64{1: 1, 4: 1 + math.Log(2), 9: 1 + math.Log(4.0/3), 7: 1 + math.Log(4)} {
		if got := w.Weight(j); math.Abs(got-want) > 1e-15 {
			t.Fatalf("idf(%d) = %v, want %v", j, got, want)
		}
	}
	v := mil.SparseVec{Idx: []int32{1, 4, 7}, Val: []float64{2, 1, -1}}
	got := w.Apply(v, true, false)
	want := []float64{2, 1 + math.Log(2), -(1 + math.Log(4))}
	for k := range want {
		if math.Abs(got.Val[k]-want[k]) > 1e-15 {
			t.Fatalf("Apply: %v, want %v", got.Val, want)
		}
	}
	n := math.Sqrt(want[0]*want[0] + want[1]*want[1] + want[2]*want[2])
	got = w.Apply(v, true, true)
	for k := range want {
		if math.Abs(got.Val[k]-want[k]/n) > 1e-15 {
			t.Fatalf("Apply with L2: %v", got.Val)
		}
	}
	if v.Val[0] != 2 {
		t.Fatal("Apply changed its argument")
	}
}

// TestWeightedRoundTrip fits slr through Weighted on featurized documents:
// the IDF travels in the model, the encoded model decodes to the same
// annotations, and a dense bag annotates as its sparse form.
func TestWeightedRoundTrip(t *testing.T) {
	f := text.Featurizer{Segmentation: text.Segmentation{Segmenter: text.Paragraphs}, Dim: 256}
	docs := []struct {
		text   string
		labels []int
	}{
		{"Engines and gearboxes of cars.\n\nThe pitcher threw a curve ball.", []int{0, 1}},
		{"Cars need engines, wheels and brakes.", []int{0}},
		{"A home run in the ninth inning.\n\nBrakes and wheels of the car.", []int{0, 1}},
		{"The batter hit the ball; the pitcher lost.", []int{1}},
	}
	d := &mil.Dataset{Name: "t", Classes: []string{"autos", "baseball"}, Dim: 256}
	for i, doc := range docs {
		fd, err := f.Featurize(doc.text)
		if err != nil {
			t.Fatal(err)
		}
		b := mil.Bag{ID: string(rune('a' + i)), Sparse: fd.Instances, Labels: doc.labels}
		// Passage labels for slr: paragraphs alternate as the text says.
		for p := range fd.Instances {
			b.InstanceLabels = append(b.InstanceLabels, doc.labels[p%len(doc.labels)])
		}
		d.Bags = append(d.Bags, b)
	}
	for _, tc := range []struct {
		inner  models.Kind
		params models.Params
		rank   int // of the basis; 0: none
	}{
		{baseline.SLRKind(), models.Params{"iters": "50", "l2": "0.01"}, 0},
		// A sparse path, and a basis asked for.
		{baseline.SLRKind(), models.Params{"iters": "50", "l2": "0.01", ParamRank: "2"}, 2},
		// MIMLCA's sparse path (a basis of its own for the assignment,
		// the metric on the passages), and the same kind on a basis.
		{mimlca.Kind(), models.Params{"select": "none"}, 0},
		{mimlca.Kind(), models.Params{"select": "none", ParamRank: "3"}, 3},
	} {
		t.Run(fmt.Sprintf("%s/rank=%d", tc.inner.Name, tc.rank), func(t *testing.T) { testWeightedRoundTrip(t, d, tc.inner, tc.params, tc.rank) })
	}
}

func testWeightedRoundTrip(t *testing.T, d *mil.Dataset, inner models.Kind, params models.Params, rank int) {
	kind := Weighted(inner)
	reg := models.NewRegistry(kind)
	ctx := context.Background()
	m, err := reg.Lookup(kind.Name)
	if err != nil {
		t.Fatal(err)
	}
	model, err := m.Fit(ctx, d, models.FitOptions{Params: params})
	if err != nil {
		t.Fatal(err)
	}
	if got := model.Meta().Dim; got != d.Dim {
		t.Fatalf("model dimension %d, want the passages' %d", got, d.Dim)
	}
	if wm := models.Unwrap(model).(*weightedModel); rank == 0 && wm.basis != nil || rank > 0 && (wm.basis == nil || wm.basis.Rank != rank) {
		t.Fatalf("basis %+v, want rank %d", wm.basis, rank)
	}
	blob, err := models.Encode(model)
	if err != nil {
		t.Fatal(err)
	}
	back, err := reg.Decode(blob)
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.Bags {
		a, err := model.Annotate(ctx, &d.Bags[i], models.Inductive)
		if err != nil {
			t.Fatal(err)
		}
		b, err := back.Annotate(ctx, &d.Bags[i], models.Inductive)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("bag %d: %+v before encoding, %+v after", i, a, b)
		}
	}
	if model.Meta().Kind != kind.Name || model.Meta().Params[ParamIDF] != "" && model.Meta().Params[ParamIDF] != "true" {
		t.Fatalf("meta %+v", model.Meta())
	}
	// A dense bag is read as its sparse form.
	dense := mil.Bag{Instances: d.Bags[0].DenseInstances(256)}
	ad, err := model.Annotate(ctx, &dense, models.Inductive)
	if err != nil {
		t.Fatal(err)
	}
	as, _ := model.Annotate(ctx, &d.Bags[0], models.Inductive)
	if !reflect.DeepEqual(ad, as) {
		t.Fatalf("dense %+v, sparse %+v", ad, as)
	}
	for _, bad := range []models.Params{{ParamIDF: "maybe"}, {ParamRank: "-1"}, {ParamRank: "x"}} {
		if _, err := m.Fit(ctx, d, models.FitOptions{Params: bad}); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
}

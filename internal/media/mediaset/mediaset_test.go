package mediaset

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/textbag"
	"github.com/mimlstream/mimlstream/internal/mil"
)

// TestLoadMatchesIngest: a photo manifest (one line without gt_mask: a
// photo to fit on) and a document manifest load into the bags ingest
// makes of the same bytes (photobag.Bag, textbag.Bag: the same instances,
// bit for bit, under the same featurizer identity), with the manifest's
// labels. Catches fit and eval featurizing otherwise than the stream (a
// model every bag would then be refused by, or judged on other
// instances), and a photo without ground truth refused for fitting, or
// scored.
func TestLoadMatchesIngest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	img, err := os.ReadFile("../../../testdata/msrc_v2_sample/images/5_12_s.jpg")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.jpg"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "photos.jsonl")
	if err := os.WriteFile(manifest, []byte(`{"id":"p","image":"p.jpg","labels":["cow"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if KindOf(manifest) != Photos {
		t.Fatalf("%s is not read as photos", manifest)
	}
	set, err := Load(ctx, manifest, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := imagefeat.New(imagefeat.DefaultParams())
	want, err := photobag.Bag(photobag.Photo{ID: "p", Data: img, Labels: []string{"cow"}}, f, []string{"cow"}, photo.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := set.Data.Bags[0]
	if set.Featurizer == nil || !set.Featurizer.Equal(*want.Featurizer) || !sameRows(got.Instances, want.Instances) ||
		len(got.Labels) != 1 || set.Data.Classes[got.Labels[0]] != "cow" {
		t.Fatalf("photo set: featurizer %v (ingest %v), %d instances (ingest %d), labels %v of %v",
			set.Featurizer, want.Featurizer, len(got.Instances), len(want.Instances), got.Labels, set.Data.Classes)
	}
	if _, err := set.InstanceScore([]*mil.Bag{&got}, []measure.Prediction{{InstanceLabels: make([]int, len(got.Instances))}}); err == nil {
		t.Error("a photo without gt_mask scored")
	}

	docs := filepath.Join(dir, "docs.jsonl")
	body := "Orbits decay.\n\nThe launch of the shuttle was delayed by a crack in a fuel line; café crews waited."
	if err := os.WriteFile(docs, []byte(`{"id":"d","text":"`+"Orbits decay.\\n\\nThe launch of the shuttle was delayed by a crack in a fuel line; café crews waited."+`","labels":["sci.space"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if KindOf(docs) != Documents {
		t.Fatalf("%s is not read as documents", docs)
	}
	dset, err := Load(ctx, docs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tf, _ := text.DefaultFeaturizer().Normalized()
	dwant, err := textbag.Bag(textbag.Doc{ID: "d", Data: []byte(body)}, tf, nil)
	if err != nil {
		t.Fatal(err)
	}
	dgot := dset.Data.Bags[0]
	if dset.Featurizer == nil || !dset.Featurizer.Equal(*dwant.Featurizer) || len(dgot.Sparse) != len(dwant.SparseInstances) || dset.Data.Dim != dwant.Dim {
		t.Fatalf("document set: featurizer %v (ingest %v), %d passages (ingest %d), dim %d (ingest %d)",
			dset.Featurizer, dwant.Featurizer, len(dgot.Sparse), len(dwant.SparseInstances), dset.Data.Dim, dwant.Dim)
	}
	for k, v := range dgot.Sparse {
		w := dwant.SparseInstances[k]
		if len(v.Idx) != len(w.Idx) {
			t.Fatalf("passage %d: %d terms, ingest %d", k, len(v.Idx), len(w.Idx))
		}
		for e := range v.Idx {
			if v.Idx[e] != w.Idx[e] || v.Val[e] != w.Val[e] {
				t.Fatalf("passage %d term %d: %d=%v, ingest %d=%v", k, e, v.Idx[e], v.Val[e], w.Idx[e], w.Val[e])
			}
		}
	}
}

func sameRows(a, b [][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

package retrain

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/textbag"
	"github.com/mimlstream/mimlstream/internal/media/tfidf"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestFitOnMediaManifests: retrainer fit --data on a photo manifest and on
// a document manifest (the dev sets' formats) featurizes them as ingest
// does and stores a model that records the featurizer; a bag made of one
// of those photos or documents by the ingest path passes the model's
// featurizer guard (media.Check, which the annotator and the promotion
// apply) and a bag of the other medium does not. A document model is the
// kind's IDF-weighted form. Catches fit ignoring manifests (a load error),
// a model without its featurizer (annotators would take any bag), and a
// fit through another featurizer than ingest's (every bag refused).
func TestFitOnMediaManifests(t *testing.T) {
	addr, rdb, _ := streamtest.StartRedis(t)
	kinds := catalog.New()
	reg := featurestore.NewRegistry(rdb, "fitmedia")
	photoF, err := imagefeat.New(imagefeat.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	textF, err := text.Featurizer{}.Normalized() // the service's
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../../testdata/msrc_v2_sample/images/10_10_s.jpg")
	if err != nil {
		t.Fatal(err)
	}
	photoBag, err := photobag.Bag(photobag.Photo{ID: "p", Data: raw}, photoF, nil, photo.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	docBag, err := textbag.Bag(textbag.Doc{ID: "d", Data: []byte("Orbiting satellites need fuel; the launch was delayed by weather.")}, textF, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		data, kind  string
		same, other *wire.BagMessage
	}{
		{"../../../testdata/msrc_v2_sample/bags.jsonl", "orlr", photoBag, docBag},
		{"../../../testdata/text_dev_sample/docs.jsonl", "orlr" + tfidf.Suffix, docBag, photoBag},
	} {
		var stdout, stderr bytes.Buffer
		args := []string{"--redis", addr, "--registry-prefix", "fitmedia", "--data", c.data, "--model", "orlr", "--param", "iters=3", "--param", "select=none"}
		if err := FitCommand(context.Background(), service.Env{Stdout: &stdout, Stderr: &stderr}, kinds, args); err != nil {
			t.Fatalf("%s: %v\n%s", c.data, err, stderr.String())
		}
		versions, err := reg.List(context.Background())
		if err != nil || len(versions) == 0 {
			t.Fatalf("versions %v, %v", versions, err)
		}
		meta := versions[len(versions)-1]
		blob, _, err := reg.Get(context.Background(), meta.Version)
		if err != nil {
			t.Fatal(err)
		}
		m, err := kinds.Decode(blob)
		if err != nil {
			t.Fatalf("%s: the annotators' catalog cannot decode the model: %v", c.data, err)
		}
		if meta.Kind != c.kind || m.Meta().Kind != c.kind {
			t.Errorf("%s: kind %s (model %s), want %s", c.data, meta.Kind, m.Meta().Kind, c.kind)
		}
		if meta.Featurizer == nil {
			t.Fatalf("%s: the model records no featurizer: %s", c.data, stdout.String())
		}
		if err := media.Check(*meta.Featurizer, *c.same.Featurizer); err != nil {
			t.Errorf("%s: an ingest bag of the same medium refused: %v", c.data, err)
		}
		if err := media.Check(*meta.Featurizer, *c.other.Featurizer); err == nil {
			t.Errorf("%s: a bag of the other medium (%s) passes the guard of %s", c.data, c.other.Featurizer, meta.Featurizer)
		}
		if meta.Dim != c.same.Dim {
			t.Errorf("%s: model dim %d, ingest bags %d", c.data, meta.Dim, c.same.Dim)
		}
		if !strings.Contains(stdout.String(), `"featurizer"`) {
			t.Errorf("%s: fit's output does not show the featurizer: %s", c.data, stdout.String())
		}
	}
}

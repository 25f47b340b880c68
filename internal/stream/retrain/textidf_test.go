package retrain

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/textbag"
	"github.com/mimlstream/mimlstream/internal/media/tfidf"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
	"github.com/mimlstream/mimlstream/internal/models/mimlca"
	"github.com/mimlstream/mimlstream/internal/models/orlr"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// topicWords are the words of three topics and some words every topic
// uses (which IDF weighs down).
var topicWords = [][]string{
	{"engine", "gearbox", "brakes", "wheels", "tyres", "clutch", "exhaust", "piston"},
	{"pitcher", "batter", "inning", "umpire", "catcher", "homer", "bullpen", "shortstop"},
	{"orbit", "rocket", "launch", "shuttle", "payload", "comet", "planet", "telescope"},
}

var commonWords = []string{"people", "think", "really", "problem", "question", "years", "thanks", "anyone"}

// textDocs returns n documents of 1-3 paragraphs, each paragraph about
// one topic, and each document's labels (its paragraphs' topics).
func textDocs(n int, rng *rand.Rand) (docs []string, labels [][]string) {
	classes := []string{"autos", "baseball", "space"}
	for range n {
		var paras []string
		var ls []string
		for range 1 + rng.IntN(3) {
			c := rng.IntN(len(topicWords))
			var ws []string
			for range 12 + rng.IntN(10) {
				if rng.IntN(2) == 0 {
					ws = append(ws, topicWords[c][rng.IntN(len(topicWords[c]))])
				} else {
					ws = append(ws, commonWords[rng.IntN(len(commonWords))])
				}
			}
			paras = append(paras, strings.Join(ws, " ")+".")
			if !strings.Contains(strings.Join(ls, " "), classes[c]) {
				ls = append(ls, classes[c])
			}
		}
		docs = append(docs, strings.Join(paras, "\n\n"))
		labels = append(labels, ls)
	}
	return docs, labels
}

// TestRefitOnDocumentsKeepsIDF: a window of documents' bags (the text
// featurizer's) is refitted as KIND+tfidf, the model annotates exactly as
// tfidf.Weighted(KIND) fitted on the same training bags (the IDF of the
// window's passages, and for a kind without a sparse path the latent
// semantic basis, travel in the stored model), and not as KIND on the raw
// term frequencies.
func TestRefitOnDocumentsKeepsIDF(t *testing.T) {
	for _, tc := range []struct {
		kind   models.Kind
		params models.Params
	}{
		{orlr.Kind(), models.Params{"select": "none", "l2": "1e-3", "iters": "20"}},
		{mimlca.Kind(), models.Params{"select": "none", tfidf.ParamRank: "5"}},
	} {
		t.Run(tc.kind.Name, func(t *testing.T) { testRefitOnDocuments(t, tc.kind, tc.params) })
	}
}

func testRefitOnDocuments(t *testing.T, kind models.Kind, params models.Params) {
	h := newHarness(t)
	h.kinds = catalog.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := text.Featurizer{Segmentation: text.Segmentation{Segmenter: text.Paragraphs}, Dim: 512}.Normalized()
	if err != nil {
		t.Fatal(err)
	}
	classes := []string{"autos", "baseball", "space"}
	docs, labels := textDocs(48, rand.New(rand.NewPCG(3, 4)))
	var ids []string
	var raws [][]byte
	for i, d := range docs {
		m, err := textbag.Bag(textbag.Doc{ID: fmt.Sprintf("doc-%02d", i), URI: "test", Data: []byte(d), Labels: labels[i]}, f, classes)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := m.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		ids, raws = append(ids, m.ID), append(raws, raw)
	}
	h.writeTrain(ctx, ids, raws)
	r := h.retrainer(func(c *RetrainerConfig) {
		c.Kind, c.Params, c.Every, c.DeadLetterTopic = kind.Name, params, 1000, h.topics.DeadLetter
	})
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	streamtest.WaitFor(t, 20*time.Second, "first refit", func() bool { return len(r.Results()) > 0 })
	if res := r.Results()[0]; !res.Promoted || res.Error != "" {
		t.Fatalf("first refit %+v: want promoted", res)
	}
	blob, meta, err := h.reg.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Kind != kind.Name+tfidf.Suffix || meta.Featurizer == nil || !meta.Featurizer.Equal(f.Identity()) || meta.Dim != f.Dim {
		t.Fatalf("stored version: kind %s, featurizer %v, dim %d; want %s%s, %v, %d", meta.Kind, meta.Featurizer, meta.Dim, kind.Name, tfidf.Suffix, f.Identity(), f.Dim)
	}
	got, err := h.kinds.Decode(blob)
	if err != nil {
		t.Fatal(err)
	}
	// The same training bags, as the refit took them from the window.
	train, test, _, _, _, err := r.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	fit := func(k models.Kind, params models.Params) models.Model {
		k, err := models.NewRegistry(k).Lookup(k.Name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := k.Fit(ctx, train, models.FitOptions{Seed: r.cfg.Seed, Params: params}) // the refit's seed
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	rawParams := maps.Clone(params)
	delete(rawParams, tfidf.ParamRank)
	weighted, raw := fit(tfidf.Weighted(kind), params), fit(kind, rawParams)
	differs := false
	for _, b := range append(train.Bags, test.Bags...) {
		for _, mode := range []models.Mode{models.Inductive, models.Transductive} {
			q := mil.Bag{ID: b.ID, Sparse: b.Sparse}
			if mode == models.Transductive {
				q.Labels = b.Labels
			}
			a, err := got.Annotate(ctx, &q, mode)
			if err != nil {
				t.Fatal(err)
			}
			w, _ := weighted.Annotate(ctx, &q, mode)
			if !reflect.DeepEqual(a, w) {
				t.Fatalf("bag %s, %s: the refit's model annotates %+v, tfidf.Weighted(%s) %+v", b.ID, mode, a, kind.Name, w)
			}
			o, _ := raw.Annotate(ctx, &q, mode)
			differs = differs || !reflect.DeepEqual(a.InstanceScores, o.InstanceScores)
		}
	}
	if !differs {
		t.Errorf("%s on raw term frequencies annotates as the refit's model: the test cannot tell IDF weighting from none", kind.Name)
	}
}

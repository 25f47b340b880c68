package ingest

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/textbag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestPublishDocuments: a document becomes a bag of its passages with its
// provenance (each passage's span in code points and bytes reading the
// same text); a document that is not UTF-8, an oversize one and one
// labeled outside the vocabulary are dead-lettered with their reasons and
// originals, and the good one still goes out.
func TestPublishDocuments(t *testing.T) {
	p, brokers, topics := startPublisher(t, PublisherConfig{LabelFraction: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	good := "Ünïcödé engines and gearboxes.\n\nThe pitcher threw a curve ball in the ninth inning, and the batter missed."
	docs := []textbag.Doc{
		{ID: "good", URI: "good.txt", Data: []byte(good), Labels: []string{"autos", "baseball"}},
		{ID: "latin1", URI: "l.txt", Data: []byte("caf\xe9 au lait")},
		{ID: "huge", URI: "h.txt", Data: bytes.Repeat([]byte("word "), text.MaxDocumentBytes/5+1)},
		{ID: "stranger", URI: "s.txt", Data: []byte("dragons"), Labels: []string{"dragons"}},
	}
	orig := make([][]byte, len(docs))
	for i, d := range docs {
		orig[i] = []byte(`{"id":"` + d.ID + `","path":"` + d.URI + `"}`)
	}
	f, _ := text.Featurizer{}.Normalized()
	rej, err := p.PublishDocuments(ctx, f, []string{"autos", "baseball"}, docs, orig)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]wire.Reason{}
	for _, r := range rej {
		got[r.ID] = r.Reason
		if r.ID == "latin1" && !strings.Contains(r.Error, "byte offset 3") {
			t.Errorf("latin1: %s, want the offset of the bad byte", r.Error)
		}
	}
	want := map[string]wire.Reason{"latin1": wire.ReasonMedia, "huge": wire.ReasonOversize, "stranger": wire.ReasonVocabulary}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rejected %v, want %v", got, want)
	}
	bag, _ := firstBag(t, brokers, topics.Train)
	if bag.ID != "good" || bag.Media == nil || bag.Media.Size != int64(len(good)) || bag.Media.ContentType != textbag.ContentType ||
		bag.Featurizer == nil || !bag.Featurizer.Equal(f.Identity()) || len(bag.Regions) != len(bag.SparseInstances) ||
		!reflect.DeepEqual(bag.Labels, []int{0, 1}) {
		t.Fatalf("bag %+v", bag)
	}
	runes := []rune(good)
	for i, r := range bag.Regions {
		if r.Span == nil || r.ByteSpan == nil || string(runes[r.Span.Start:r.Span.End]) != good[r.ByteSpan.Start:r.ByteSpan.End] {
			t.Fatalf("region %d %+v does not read one text", i, r)
		}
	}
	wantDeadLetters(t, brokers, topics.DeadLetter, want)
}

// TestIngestDocumentManifestAndFolder: ingest --data with testdata's
// twenty documents publishes them as text bags, labeled, without their
// ground truth; a folder of .txt files publishes each, unlabeled, and
// dead-letters the one that is not UTF-8.
func TestIngestDocumentManifestAndFolder(t *testing.T) {
	brokers, topics := startCluster(t)
	b := strings.Join(brokers, ",")
	if stdout, _ := runCommand(t, "--brokers", b, "--data", "../../../testdata/text_dev_sample/docs.jsonl", "--label-fraction", "1", "--progress=false"); !strings.Contains(stdout, "published 20 bags (20 labeled") {
		t.Errorf("summary %q", stdout)
	}
	for _, m := range readBags(t, brokers, topics.Train, 20) {
		if m.Media == nil || len(m.Regions) != len(m.SparseInstances) || m.InstanceLabels != nil || len(m.Labels) == 0 {
			t.Fatalf("train bag %v", m)
		}
	}
	dir := t.TempDir()
	for name, body := range map[string]string{"a.txt": "The engine and the gearbox.", "b.txt": "Pitcher, batter, home run.", "c.txt": "caf\xe9"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr := runCommand(t, "--brokers", b, "--data", dir, "--progress=false")
	if !strings.Contains(stdout, "published 2 bags (0 labeled") || !strings.Contains(stderr, "document c.txt: media") {
		t.Errorf("folder: stdout %q stderr %q", stdout, stderr)
	}
	if !utf8.ValidString(stderr) {
		t.Errorf("stderr echoes invalid bytes: %q", stderr)
	}
}

// TestDefaultTextFeaturizerNormalized: the doors' featurizer is already
// in normal form, so the identity its bags carry is the one a model of
// the default settings records.
func TestDefaultTextFeaturizerNormalized(t *testing.T) {
	f := defaultTextFeaturizer()
	n, err := f.Normalized()
	if err != nil || !n.Identity().Equal(f.Identity()) || n.Dim != f.Dim {
		t.Fatalf("default %+v, normalized %+v, %v", f, n, err)
	}
}

// TestPostMediaText: POST /media with text/plain publishes the document's
// bag (its passages, with their spans); a body that is not UTF-8 is 422
// with reason media and dead-lettered.
func TestPostMediaText(t *testing.T) {
	p, brokers, topics := startPublisher(t, PublisherConfig{LabelFraction: 1})
	srv := httptest.NewServer(Handler(p, HTTPConfig{MaxLineBytes: 1 << 20, MaxConcurrent: 2}, nil))
	defer srv.Close()
	post := func(query string, body []byte) (int, MediaResult) {
		return postMedia(t, srv.URL, query, "text/plain; charset=utf-8", "", body)
	}
	if code, res := post("id=doc&uri=doc.txt&labels=autos&classes=autos,baseball", []byte("Engines, gearboxes and brakes of the café's cars.")); code != http.StatusOK || !res.Published {
		t.Fatalf("document: %d %+v", code, res)
	}
	if code, res := post("id=latin1", []byte("caf\xe9")); code != http.StatusUnprocessableEntity || res.Reason != wire.ReasonMedia || !strings.Contains(res.Error, "byte offset 3") {
		t.Fatalf("latin-1 document: %d %+v", code, res)
	}
	if m := readBags(t, brokers, topics.Annotate, 1)[0]; m.ID != "doc" || len(m.Regions) != len(m.SparseInstances) || m.Regions[0].Span == nil || m.Featurizer == nil || m.Featurizer.Name != text.FeaturizerName {
		t.Fatalf("bag %+v", m)
	}
}

package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/textbag"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestPublishDocuments: a document becomes a bag of its passages with its
// provenance (each passage's span in code points and bytes reading the
// same text); a document that is not UTF-8, an oversize one and one
// labeled outside the vocabulary are dead-lettered with their reasons and
// originals, and the good one still goes out.
func TestPublishDocuments(t *testing.T) {
	topics := wire.DefaultTopics()
	brokers := streamtest.StartBroker(t, 1, topics.All()...)
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
	p, err := NewPublisher(PublisherConfig{Brokers: brokers, Topics: topics, LabelFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
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
	tctx, tcancel := context.WithTimeout(ctx, 20*time.Second)
	defer tcancel()
	var bag *wire.BagMessage
	v, _ := wire.NewValidator(0)
	_ = kafkaio.Tail(tctx, brokers, kafkasec.Conn{}, topics.Train, func(m kafka.Message) error {
		bag, err = v.DecodeBag(m.Value)
		tcancel()
		return err
	})
	if bag == nil {
		t.Fatal("no bag on the train topic")
	}
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
	dctx, dcancel := context.WithTimeout(ctx, 20*time.Second)
	defer dcancel()
	dead := map[string]string{}
	_ = kafkaio.Tail(dctx, brokers, kafkasec.Conn{}, topics.DeadLetter, func(m kafka.Message) error {
		var d wire.DeadLetter
		if err := json.Unmarshal(m.Value, &d); err != nil {
			return err
		}
		dead[d.Key] = string(d.Reason) + " " + string(d.Original)
		if len(dead) == len(want) {
			dcancel()
		}
		return nil
	})
	for id, r := range want {
		if w := string(r) + ` {"id":"` + id + `"`; !strings.HasPrefix(dead[id], w) {
			t.Errorf("dead letter of %s: %q, want reason %s and its manifest line", id, dead[id], r)
		}
	}
}

// TestIngestDocumentManifestAndFolder: ingest --data with testdata's
// twenty documents publishes them as text bags, labeled, without their
// ground truth; a folder of .txt files publishes each, unlabeled, and
// dead-letters the one that is not UTF-8.
func TestIngestDocumentManifestAndFolder(t *testing.T) {
	topics := wire.DefaultTopics()
	brokers := streamtest.StartBroker(t, 1, topics.All()...)
	b := strings.Join(brokers, ",")
	var stdout, stderr bytes.Buffer
	env := service.Env{Stdout: &stdout, Stderr: &stderr}
	if err := Command(context.Background(), env, []string{"--brokers", b, "--data", "../../../testdata/text_dev_sample/docs.jsonl", "--label-fraction", "1", "--progress=false"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "published 20 bags (20 labeled") {
		t.Errorf("summary %q", stdout.String())
	}
	v, _ := wire.NewValidator(0)
	for _, raw := range readTopic(t, brokers, topics.Train, 20) {
		m, err := v.DecodeBag(raw)
		if err != nil || m.Media == nil || len(m.Regions) != len(m.SparseInstances) || m.InstanceLabels != nil || len(m.Labels) == 0 {
			t.Fatalf("train bag %v: %v", m, err)
		}
	}
	dir := t.TempDir()
	for name, body := range map[string]string{"a.txt": "The engine and the gearbox.", "b.txt": "Pitcher, batter, home run.", "c.txt": "caf\xe9"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stdout.Reset()
	stderr.Reset()
	if err := Command(context.Background(), env, []string{"--brokers", b, "--data", dir, "--progress=false"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "published 2 bags (0 labeled") || !strings.Contains(stderr.String(), "document c.txt: media") {
		t.Errorf("folder: stdout %q stderr %q", stdout.String(), stderr.String())
	}
	if !utf8.ValidString(stderr.String()) {
		t.Errorf("stderr echoes invalid bytes: %q", stderr.String())
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
	topics := wire.DefaultTopics()
	brokers := streamtest.StartBroker(t, 1, topics.All()...)
	p, err := NewPublisher(PublisherConfig{Brokers: brokers, Topics: topics, LabelFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer(Handler(p, HTTPConfig{MaxLineBytes: 1 << 20, MaxConcurrent: 2}, nil))
	defer srv.Close()
	post := func(query string, body []byte) (int, MediaResult) {
		resp, err := http.Post(srv.URL+"/media?"+query, "text/plain; charset=utf-8", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res MediaResult
		_ = json.NewDecoder(resp.Body).Decode(&res)
		return resp.StatusCode, res
	}
	if code, res := post("id=doc&uri=doc.txt&labels=autos&classes=autos,baseball", []byte("Engines, gearboxes and brakes of the café's cars.")); code != http.StatusOK || !res.Published {
		t.Fatalf("document: %d %+v", code, res)
	}
	if code, res := post("id=latin1", []byte("caf\xe9")); code != http.StatusUnprocessableEntity || res.Reason != wire.ReasonMedia || !strings.Contains(res.Error, "byte offset 3") {
		t.Fatalf("latin-1 document: %d %+v", code, res)
	}
	v, _ := wire.NewValidator(0)
	for _, raw := range readTopic(t, brokers, topics.Annotate, 1) {
		m, err := v.DecodeBag(raw)
		if err != nil || m.ID != "doc" || len(m.Regions) != len(m.SparseInstances) || m.Regions[0].Span == nil || m.Featurizer == nil || m.Featurizer.Name != text.FeaturizerName {
			t.Fatalf("bag %+v: %v", m, err)
		}
	}
}

package status_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/kafkaview"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/textbag"
	"github.com/mimlstream/mimlstream/internal/status"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/schemas"
)

// galleryScreenshotEnv names a file to write the gallery's screenshot to.
const galleryScreenshotEnv = "MIMLSTREAM_STATUS_GALLERY_SCREENSHOT"

// mediaSet is what mediaAnnotations made: a media root and the
// annotations of its photos and documents, as an annotator writes them.
type mediaSet struct {
	root        string
	annotations [][]byte
	photos      []string // bag ids
	docs        map[string]string
	// missing is the bag id of a photo annotation whose photo is not
	// under the root.
	missing string
}

// mediaAnnotations builds a media root (the sample photos of
// testdata/msrc_v2_sample, the sample documents' manifest, and one
// document as a file) and annotations of their bags as the service makes
// them (photobag.Bag, textbag.Bag with the default featurizers). The
// labels are not a model's: each region or passage gets the ground-truth
// class most of it covers, so the page can be checked against the truth
// (model "ground-truth"); the status page's drawing, not a model, is
// under test.
func mediaAnnotations(t *testing.T) mediaSet {
	t.Helper()
	root := t.TempDir()
	sample, err := filepath.Abs("../../testdata/msrc_v2_sample")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(sample, "images"), filepath.Join(root, "images")); err != nil {
		t.Fatal(err)
	}
	set := mediaSet{root: root, docs: map[string]string{}}
	now := time.Now().UTC()
	add := func(m *wire.BagMessage, labels []int, scores [][]float64, classes []string) {
		a := wire.AnnotationMessage{SchemaVersion: schemas.Version, BagID: m.ID, Source: m.Source, Model: "ground-truth", ModelVersion: "v1",
			Mode: "inductive", Classes: classes, InstanceLabels: labels, InstanceScores: scores, AnnotatedAt: now,
			Media: m.Media, Featurizer: m.Featurizer, Regions: m.Regions, BagLabels: []int{}, BagScores: make([]float64, len(classes))}
		for _, l := range labels {
			if l >= 0 && !slices.Contains(a.BagLabels, l) {
				a.BagLabels = append(a.BagLabels, l)
			}
		}
		slices.Sort(a.BagLabels)
		raw, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		set.annotations = append(set.annotations, raw)
	}

	lines, dir, err := photobag.ReadManifest(filepath.Join(sample, "bags.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	classes, err := photobag.Classes(dir, lines)
	if err != nil {
		t.Fatal(err)
	}
	f, err := imagefeat.New(imagefeat.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		data, err := os.ReadFile(filepath.Join(dir, l.Image))
		if err != nil {
			t.Fatal(err)
		}
		m, err := photobag.Bag(photobag.Photo{ID: l.ID, URI: l.Image, Data: data, Labels: l.Labels}, f, classes, photo.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		labels, scores := photoTruth(t, filepath.Join(dir, l.GTMask), l, m, classes)
		add(m, labels, scores, classes)
		set.photos = append(set.photos, l.ID)
	}
	// A photo annotated elsewhere: its file is not under the root.
	{
		var m wire.BagMessage
		if err := json.Unmarshal(set.annotations[0], &m); err != nil {
			t.Fatal(err)
		}
		var a wire.AnnotationMessage
		_ = json.Unmarshal(set.annotations[0], &a)
		a.BagID, set.missing = "elsewhere", "elsewhere"
		md := *a.Media
		md.URI = "images/not-here.jpg"
		a.Media = &md
		raw, _ := json.Marshal(a)
		set.annotations = append(set.annotations, raw)
	}

	entries, err := text.ReadManifestFile("../../testdata/text_dev_sample/docs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	entries = entries[:3]
	var manifest bytes.Buffer
	for _, e := range entries[:2] {
		b, _ := json.Marshal(map[string]any{"id": e.ID, "text": e.Text, "labels": e.Labels})
		manifest.Write(append(b, '\n'))
	}
	if err := os.WriteFile(filepath.Join(root, "docs.jsonl"), manifest.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The third as a file, named by its path as a folder's document is.
	if err := os.MkdirAll(filepath.Join(root, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes", "third.txt"), []byte(entries[2].Text), 0o644); err != nil {
		t.Fatal(err)
	}
	var dclasses []string
	for _, e := range entries {
		for _, p := range e.Passages {
			if !slices.Contains(dclasses, p.Label) {
				dclasses = append(dclasses, p.Label)
			}
		}
	}
	slices.Sort(dclasses)
	tf := text.Featurizer{Segmentation: text.Segmentation{Segmenter: text.Windows, Window: text.DefaultWindow, Stride: text.DefaultStride},
		Dim: text.DefaultDim, TF: text.Log}
	for i, e := range entries {
		uri := ""
		if i == 2 {
			uri = "notes/third.txt"
		}
		m, err := textbag.Bag(textbag.Doc{ID: e.ID, URI: uri, Data: []byte(e.Text)}, tf, dclasses)
		if err != nil {
			t.Fatal(err)
		}
		labels := make([]int, len(m.Regions))
		scores := make([][]float64, len(m.Regions))
		for k, r := range m.Regions {
			// The ground-truth passage overlapping the window most.
			bestOverlap := 0
			labels[k] = -1
			for _, p := range e.Passages {
				if o := min(r.Span.End, p.End) - max(r.Span.Start, p.Start); o > bestOverlap {
					bestOverlap, labels[k] = o, slices.Index(dclasses, p.Label)
				}
			}
			scores[k] = make([]float64, len(dclasses))
			if labels[k] >= 0 {
				scores[k][labels[k]] = 1
			}
		}
		add(m, labels, scores, dclasses)
		set.docs[e.ID] = e.Text
	}
	return set
}

// photoTruth labels each region of m with the ground-truth class most of
// its pixels have (void pixels left out; -1 when all are void).
func photoTruth(t *testing.T, gtPath string, l photobag.Line, m *wire.BagMessage, classes []string) ([]int, [][]float64) {
	t.Helper()
	fh, err := os.Open(gtPath)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	gt, err := png.Decode(fh)
	if err != nil {
		t.Fatal(err)
	}
	w := gt.Bounds().Dx()
	classOf := map[int]int{}
	for _, r := range l.Regions {
		classOf[r.ID] = slices.Index(classes, r.Label)
	}
	labels := make([]int, len(m.Regions))
	scores := make([][]float64, len(m.Regions))
	for k, r := range m.Regions {
		mask, err := r.Mask.Decode()
		if err != nil {
			t.Fatal(err)
		}
		votes := make([]int, len(classes))
		total := 0
		for p, in := range mask {
			if !in {
				continue
			}
			g, _, _, _ := gt.At(p%w, p/w).RGBA()
			if c, ok := classOf[int(g>>8)]; ok && c >= 0 {
				votes[c]++
				total++
			}
		}
		labels[k] = -1
		scores[k] = make([]float64, len(classes))
		best := 0
		for c, v := range votes {
			scores[k][c] = float64(v) / float64(max(total, 1))
			if v > best {
				best, labels[k] = v, c
			}
		}
	}
	return labels, scores
}

// publishAnnotations writes the annotations to the annotations topic, as
// the annotators do (keyed by bag id).
func publishAnnotations(t *testing.T, brokers []string, topic string, values [][]byte) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{}, BatchTimeout: 10 * time.Millisecond}
	defer w.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		var a wire.AnnotationMessage
		_ = json.Unmarshal(v, &a)
		msgs[i] = kafka.Message{Key: []byte(a.BagID), Value: v}
	}
	if err := w.WriteMessages(t.Context(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// TestStatusGalleryInChromium serves the status page over the embedded
// broker and the real Redis, with the annotations of three sample photos,
// one photo not under the media root, and three documents (two sent
// inline, found in the root's manifest by their hash, one a file) on the
// annotations topic, and loads it in headless Chromium: every photo's
// picture loads and lists its regions' scores on hover, the missing photo
// says why it is not drawn, and every document shows its whole text with
// its passages highlighted by label.
func TestStatusGalleryInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker and a browser; skipped with -short")
	}
	rdb, prefix := browserAndRedis(t, "status-gallery")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	topics := wire.DefaultTopics()
	brokers := streamtest.StartBroker(t, 2, topics.All()...)
	set := mediaAnnotations(t)
	publishAnnotations(t, brokers, topics.Annotations, set.annotations)

	c, err := status.NewCollector(status.Config{Registry: featurestore.NewRegistry(rdb, prefix+":models"), Kafka: kafkaview.New(brokers, kafkasec.Conn{}),
		Topics: topics, Group: "annotator", Interval: 250 * time.Millisecond, MediaRoot: set.root})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Run(ctx) }()
	page := httptest.NewServer(status.Handler(c, 400*time.Millisecond, nil))
	defer page.Close()
	streamtest.WaitExplained(t, 30*time.Second, 50*time.Millisecond, func() bool {
		return len(c.Snapshot().Gallery) == len(set.annotations)
	}, func() string {
		return fmt.Sprintf("the gallery holds %d of the %d annotations", len(c.Snapshot().Gallery), len(set.annotations))
	})

	within := openInChromium(t, page.URL)
	// Every photo under the root is a picture the browser decoded, at
	// the photo's width plus the legend's.
	type shown struct {
		Bag   string `json:"bag"`
		Width int    `json:"width"`
		Title string `json:"title"`
		Error string `json:"error"`
	}
	photos, err := chromedp.Run(within(20*time.Second), chromedp.Poll[[]shown](
		`(() => { const figs = [...document.querySelectorAll("#photos figure.photo")];
		  const imgs = figs.map(f => f.querySelector("img")).filter(i => i);
		  if (figs.length !== 4 || imgs.length !== 3 || !imgs.every(i => i.complete && i.naturalWidth > 0)) return null;
		  return figs.map(f => { const i = f.querySelector("img"), e = f.querySelector(".err");
		    return {bag: f.dataset.bag, width: i ? i.naturalWidth : 0, title: i ? i.title : "", error: e ? e.textContent : ""}; }); })()`))
	if err != nil {
		t.Fatalf("the gallery's pictures did not load: %v", err)
	}
	for _, p := range photos {
		if p.Bag == set.missing {
			if p.Width != 0 || !strings.Contains(p.Error, "not-here.jpg") {
				t.Errorf("photo not under the root: width %d, error %q; want no picture and the reason", p.Width, p.Error)
			}
			continue
		}
		if !slices.Contains(set.photos, p.Bag) {
			t.Errorf("unexpected photo %q", p.Bag)
		}
		if p.Width != 320+240 || !strings.Contains(p.Title, "region 1 [") || !strings.Contains(p.Title, "region 6") || p.Error != "" {
			t.Errorf("photo %s: width %d (want 560), title %q, error %q", p.Bag, p.Width, p.Title, p.Error)
		}
	}
	// Every document is shown whole, its passages highlighted.
	type doc struct {
		Bag    string   `json:"bag"`
		Text   string   `json:"text"`
		Marks  int      `json:"marks"`
		Colour []string `json:"colours"`
		Title  string   `json:"title"`
	}
	docs, err := chromedp.Run(within(10*time.Second), chromedp.Evaluate[[]doc](
		`[...document.querySelectorAll("#docs .doc")].map(d => { const marks = [...d.querySelectorAll("mark.passage")];
		  return {bag: d.dataset.bag, text: d.querySelector(".body").textContent, marks: marks.length,
		    colours: [...new Set(marks.map(m => m.style.backgroundColor))], title: marks.length ? marks[0].title : ""}; })`))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != len(set.docs) {
		t.Fatalf("%d documents shown, want %d", len(docs), len(set.docs))
	}
	for _, d := range docs {
		want, ok := set.docs[d.Bag]
		if !ok {
			t.Errorf("unexpected document %q", d.Bag)
			continue
		}
		if d.Text != want {
			t.Errorf("document %s: the page shows %d characters, not its text (%d)", d.Bag, len(d.Text), len(want))
		}
		if d.Marks == 0 || !strings.HasPrefix(d.Title, "passage 1: ") {
			t.Errorf("document %s: %d highlighted passages, first title %q", d.Bag, d.Marks, d.Title)
		}
		t.Logf("document %s: %d characters, %d highlighted pieces in %d colours", d.Bag, len(want), d.Marks, len(d.Colour))
	}
	t.Logf("gallery: %d photos drawn, 1 refused with its reason, %d documents highlighted", len(set.photos), len(docs))

	if out := os.Getenv(galleryScreenshotEnv); out != "" {
		png, err := chromedp.Run(within(30*time.Second), chromedp.Screenshot(chromedp.CSS("#gallery")))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("gallery screenshot written to %s", out)
	}
}

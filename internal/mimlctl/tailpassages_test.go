package mimlctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/mediaroot"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/textbag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestTailShowsPassageWords: a document's annotation is shown with each
// passage's label and span, and with a media root its first words, read
// from the file its URI names or, sent inline, from a manifest line with
// its hash; a document that is not the one annotated is said so, not
// shown. The spans are the featurizer's own (textbag.Bag), on non-ASCII
// text, so code points and bytes differ.
func TestTailShowsPassageWords(t *testing.T) {
	doc := "Le moteur de ma voiture chauffe, et l'embrayage patine dès la première.\n\n" +
		"Naïve question: the pitcher threw a curve ball in the ninth inning.\n\nShort one."
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "d.txt"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	inline := doc + " Sent inline."
	line, _ := json.Marshal(map[string]string{"id": "inline-1", "text": inline})
	if err := os.WriteFile(filepath.Join(root, "docs.jsonl"), append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	classes := []string{"autos", "baseball"}
	annotation := func(uri, body string) kafka.Message {
		m, err := textbag.Bag(textbag.Doc{ID: "d1", URI: uri, Data: []byte(body)}, text.DefaultFeaturizer(), classes)
		if err != nil {
			t.Fatal(err)
		}
		a := wire.AnnotationMessage{SchemaVersion: 1, BagID: m.ID, Model: "orlr+tfidf", ModelVersion: "v3", Mode: "inductive", Classes: classes,
			BagLabels: []int{0, 1}, BagScores: []float64{0.9, 0.8}, InstanceLabels: []int{0, 1, -1}, AnnotatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			LatencyMS: 1, Media: m.Media, Regions: m.Regions}
		raw, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		return kafka.Message{Partition: 0, Offset: 3, Value: raw}
	}
	head := "p0@3 2026-01-01T00:00:00Z d1 orlr+tfidf@v3 inductive: bag {autos, baseball} passages "
	spans := "[autos [0,71) | baseball [73,140) | - [142,152)]"
	withWords := `[autos [0,71) "Le moteur de ma voiture chauffe, ..." | baseball [73,140) "Naïve question: the pitcher threw a ..." | - [142,152) "Short one."]`
	inlineWords := `[autos [0,71) "Le moteur de ma voiture chauffe, ..." | baseball [73,140) "Naïve question: the pitcher threw a ..." | - [142,165) "Short one. Sent inline."]`
	f := Formatter{Root: mediaroot.New(root)}
	for _, tc := range []struct {
		name string
		f    Formatter
		msg  kafka.Message
		want string
	}{
		{"no media root: spans", Formatter{}, annotation("d.txt", doc), head + spans + " 1.00ms"},
		{"file under the root", f, annotation("d.txt", doc), head + withWords + " 1.00ms"},
		{"sent inline, found by hash", f, annotation("", inline), head + inlineWords + " 1.00ms"},
		{"another document under the name", f, annotation("d.txt", strings.Replace(doc, "moteur", "MOTEUR", 1)),
			head + spans + " (no words: media \"d.txt\" under " + root + " is not the one annotated (SHA-256 differs)) 1.00ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Format(tc.msg); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	// A photo's annotation keeps its instance labels.
	photo := wire.AnnotationMessage{BagID: "p1", Model: "orlr", ModelVersion: "v1", Mode: "inductive", Classes: classes, BagLabels: []int{1},
		InstanceLabels: []int{1, 0}, Media: &media.Media{SHA256: "00", URI: "p.png"}, Regions: []media.Region{{BBox: &[4]int{0, 0, 1, 1}}, {BBox: &[4]int{1, 1, 2, 2}}}}
	raw, _ := json.Marshal(photo)
	if got := f.Format(kafka.Message{Value: raw}); !strings.Contains(got, "instances [baseball autos]") {
		t.Errorf("photo annotation: %s", got)
	}
}

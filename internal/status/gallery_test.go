package status

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestPiecesMatchBruteForce checks the cutting of a document at its
// passages' boundaries against a code point by code point walk, on random
// overlapping spans over text with multi-byte and combining characters:
// the pieces put together are the document, and each code point of a
// piece is covered by exactly the passages the piece names.
func TestPiecesMatchBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("ab cé\u0301漢字😀\n")
	for trial := range 500 {
		doc := make([]rune, rng.IntN(40))
		for i := range doc {
			doc[i] = alphabet[rng.IntN(len(alphabet))]
		}
		n := len(doc)
		regions := make([]media.Region, 1+rng.IntN(5))
		for k := range regions {
			a := rng.IntN(n + 1)
			b := a + rng.IntN(n-a+1)
			regions[k].Span = &media.Span{Start: a, End: b}
		}
		ps, err := pieces(string(doc), regions)
		if err != nil {
			t.Fatal(err)
		}
		var whole strings.Builder
		pos := 0
		for _, p := range ps {
			whole.WriteString(p.Text)
			for range []rune(p.Text) {
				var want []int
				for k, r := range regions {
					if r.Span.Start <= pos && pos < r.Span.End {
						want = append(want, k)
					}
				}
				if !slices.Equal(p.Passages, want) && !(len(want) == 0 && len(p.Passages) == 0) {
					t.Fatalf("trial %d: code point %d covered by %v, the piece says %v", trial, pos, want, p.Passages)
				}
				pos++
			}
		}
		if whole.String() != string(doc) {
			t.Fatalf("trial %d: pieces make %q, not %q", trial, whole.String(), string(doc))
		}
	}
	if _, err := pieces("abc", []media.Region{{Span: &media.Span{Start: 1, End: 4}}}); err == nil {
		t.Error("a span past the document's end was accepted")
	}
}

func annotationJSON(t *testing.T, id, version string) []byte {
	t.Helper()
	sum := strings.Repeat("ab", 32)
	a := wire.AnnotationMessage{BagID: id, ModelVersion: version, Classes: []string{"x", "y"}, InstanceLabels: []int{1},
		InstanceScores: [][]float64{{0.2, 0.8}}, Media: &media.Media{SHA256: sum, URI: "d.txt"},
		Regions: []media.Region{{Span: &media.Span{Start: 0, End: 1}}}}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGalleryKeepsLatest: the gallery keeps the latest N media
// annotations, newest first, one per bag (a later annotation of a bag
// replaces it), and ignores annotations of vectors.
func TestGalleryKeepsLatest(t *testing.T) {
	g := newGallery("", 3)
	for i := range 5 {
		g.add(annotationJSON(t, fmt.Sprintf("b%d", i), "v1"))
	}
	g.add(annotationJSON(t, "b3", "v2"))
	g.add([]byte(`{"bag_id":"vectors","model_version":"v1","instance_labels":[0]}`))
	var got []string
	for _, it := range g.snapshot() {
		got = append(got, it.BagID+"@"+it.ModelVersion)
		if it.Error == "" {
			t.Errorf("%s: no error without a media root", it.BagID)
		}
		if it.Regions[0].Label != "y" || it.Regions[0].Scores[0] != (LabelScore{"y", 0.8}) {
			t.Errorf("%s: region %+v, want label y with its score first", it.BagID, it.Regions[0])
		}
	}
	if want := []string{"b3@v2", "b4@v1", "b2@v1"}; !slices.Equal(got, want) {
		t.Errorf("gallery %v, want %v", got, want)
	}
}

// TestGalleryReadsUnderRootOnly: a document is read from the media root
// only by a local name and only when its bytes are the ones annotated; a
// document sent inline is found in the root's manifests by its hash.
func TestGalleryReadsUnderRootOnly(t *testing.T) {
	root := t.TempDir()
	doc := "naïve café\nsecond line"
	if err := os.WriteFile(filepath.Join(root, "d.txt"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(map[string]string{"id": "inline-1", "text": doc + "!"})
	if err := os.WriteFile(filepath.Join(root, "docs.jsonl"), append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	g := newGallery(root, 4)
	ann := func(uri, text string) *wire.AnnotationMessage {
		md := media.Identify([]byte(text), uri, "text/plain; charset=utf-8")
		return &wire.AnnotationMessage{BagID: "b" + uri, ModelVersion: "v1", Media: &md, InstanceLabels: []int{0}, Classes: []string{"x"},
			Regions: []media.Region{{Span: &media.Span{Start: 0, End: 5}}}}
	}
	for _, c := range []struct {
		a       *wire.AnnotationMessage
		want    string
		wantErr string
	}{
		{ann("d.txt", doc), doc, ""},
		{ann("", doc+"!"), doc + "!", ""},
		{ann("d.txt", "another text"), "", "not the one annotated"},
		{ann("../d.txt", doc), "", "not a file name under the media root"},
		{ann("/etc/passwd", doc), "", "not a file name under the media root"},
		{ann("", "sent inline, in no manifest"), "", "in no manifest"},
	} {
		got, err := g.text(c.a)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: error %v, want one saying %q", c.a.Media.URI, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.a.Media.URI, got, err, c.want)
		}
	}
}

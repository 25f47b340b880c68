package mimlctl

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/textbag"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestPassagesCommand shows a document from an annotation that carries
// its bag's passages (made by textbag, as ingest makes them): one line per
// passage with its label and first words, and an HTML page; another
// document than the annotation's is refused.
func TestPassagesCommand(t *testing.T) {
	doc := "Ünïcödé engines, gearboxes and brakes.\n\nThe pitcher threw a curve ball in the ninth inning."
	f, _ := text.Featurizer{Segmentation: text.Segmentation{Segmenter: text.Paragraphs}}.Normalized()
	m, err := textbag.Bag(textbag.Doc{ID: "d1", URI: "d1.txt", Data: []byte(doc)}, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := wire.AnnotationMessage{BagID: "d1", Classes: []string{"autos", "baseball"}, InstanceLabels: []int{0, 1}, BagLabels: []int{0, 1},
		Media: m.Media, Featurizer: m.Featurizer, Regions: m.Regions}
	dir := t.TempDir()
	annPath, docPath, out := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "d1.txt"), filepath.Join(dir, "d1.html")
	raw, _ := json.Marshal(a)
	if err := os.WriteFile(annPath, append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	env := service.Env{Stdout: &stdout, Stderr: &bytes.Buffer{}}
	if err := PassagesCommand(context.Background(), env, []string{"--annotation", annPath, "--text", docPath, "--html", out}); err != nil {
		t.Fatal(err)
	}
	want := "[0, 38) autos: Ünïcödé engines, gearboxes and brakes.\n[40, 91) baseball: The pitcher threw a curve ball in the ...\n"
	if !strings.HasPrefix(stdout.String(), want) {
		t.Fatalf("stdout %q, want %q first", stdout.String(), want)
	}
	page, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(page), `title="baseball">The pitcher threw`) {
		t.Fatalf("page %s: %v", page, err)
	}
	if err := os.WriteFile(docPath, []byte(doc+" "), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := PassagesCommand(context.Background(), env, []string{"--annotation", annPath, "--text", docPath}); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("another document: %v", err)
	}
}

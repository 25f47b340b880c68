package text

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadManifest(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("Ünïcödé text\n\nsecond"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.txt"), []byte("ok \xfe"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := `{"id": "x", "text": "héllo wörld", "labels": ["a"], "passages": [{"start": 0, "end": 5, "label": "a"}, {"start": 6, "end": 11, "label": "b"}]}
{"id": "y", "path": "a.txt"}
`
	es, err := ReadManifest(strings.NewReader(good), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[1].Text != "Ünïcödé text\n\nsecond" || es[0].Passages[1].Label != "b" {
		t.Fatalf("entries %+v", es)
	}
	for _, c := range []struct {
		name, line string
		want       error
		msg        string
	}{
		{"invalid inline", "{\"id\": \"z\", \"text\": \"ab\xffcd\"}", ErrInvalidUTF8, "byte offset 23"},
		{"invalid file", `{"id": "z", "path": "bad.txt"}`, ErrInvalidUTF8, "byte offset 3"},
		{"missing file", `{"id": "z", "path": "none.txt"}`, ErrManifest, "none.txt"},
		{"both", `{"id": "z", "text": "a", "path": "a.txt"}`, ErrManifest, "both"},
		{"neither", `{"id": "z"}`, ErrManifest, "neither"},
		{"unknown field", `{"id": "z", "text": "a", "txet": "b"}`, ErrManifest, "txet"},
		// "héllo" is 5 code points but 6 bytes: a span past the code
		// points is refused even though it fits in the bytes.
		{"span past the end", `{"id": "z", "text": "héllo", "passages": [{"start": 0, "end": 6, "label": "a"}]}`, ErrManifest, "outside the 5 code points"},
		{"overlap", `{"id": "z", "text": "hello", "passages": [{"start": 0, "end": 3, "label": "a"}, {"start": 2, "end": 5, "label": "a"}]}`, ErrManifest, "passage 1"},
		{"repeated id", good + `{"id": "x", "text": "again"}`, ErrManifest, "repeated"},
	} {
		_, err := ReadManifest(strings.NewReader(c.line), dir)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v with %q", c.name, err, c.want, c.msg)
		}
	}
}

func TestIsManifest(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		body string
		want bool
	}{
		"docs.jsonl":   {"\n{\"id\": \"a\", \"text\": \"x\"}\n", true},
		"paths.jsonl":  {"{\"path\": \"a.txt\"}\n", true},
		"photos.jsonl": {"{\"image\": \"a.png\", \"path\": \"x\"}\n", false},
		"bags.jsonl":   {"{\"id\": \"a\", \"instances\": [[1]]}\n", false},
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := IsManifest(p); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

package mediaroot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media"
)

// TestRootFindsOnlyTheAnnotatedMedia: a file is read by a local name only,
// only when its bytes are the ones annotated and within the limit; a
// document sent inline is found in the root's manifests by its hash, and
// one in none is said so.
func TestRootFindsOnlyTheAnnotatedMedia(t *testing.T) {
	dir := t.TempDir()
	doc := "naïve café\nsecond line"
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"d.txt": doc, "sub/e.txt": doc + "?"} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	line, _ := json.Marshal(map[string]string{"id": "inline-1", "text": doc + "!"})
	if err := os.WriteFile(filepath.Join(dir, "docs.jsonl"), append([]byte("not json\n"), append(line, '\n')...), 0o644); err != nil {
		t.Fatal(err)
	}
	r := New(dir)
	md := func(uri, body string) *media.Media {
		m := media.Identify([]byte(body), uri, "text/plain; charset=utf-8")
		return &m
	}
	for _, c := range []struct {
		name    string
		md      *media.Media
		limit   int
		want    string
		wantErr string
	}{
		{"local name", md("d.txt", doc), 1 << 10, doc, ""},
		{"in a subfolder", md("sub/e.txt", doc+"?"), 1 << 10, doc + "?", ""},
		{"other bytes under the name", md("d.txt", "another text"), 1 << 10, "", "not the one annotated"},
		{"over the limit", md("d.txt", doc), 5, "", "more than 5 bytes"},
		{"parent folder", md("../d.txt", doc), 1 << 10, "", "not a file name under the media root"},
		{"absolute path", md("/etc/passwd", doc), 1 << 10, "", "not a file name under the media root"},
		{"missing file", md("gone.txt", doc), 1 << 10, "", "not under the media root"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := r.Read(c.md, c.limit)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil || string(got) != c.want {
				t.Fatalf("%q, %v; want %q", got, err, c.want)
			}
		})
	}
	if got, err := r.Document(md("", doc+"!")); err != nil || got != doc+"!" {
		t.Errorf("inline document: %q, %v", got, err)
	}
	if got, err := r.Document(md("d.txt", doc)); err != nil || got != doc {
		t.Errorf("document by name: %q, %v", got, err)
	}
	if _, err := r.Document(md("", "in no manifest")); err == nil || !strings.Contains(err.Error(), "in no manifest") {
		t.Errorf("inline document in no manifest: %v", err)
	}
}

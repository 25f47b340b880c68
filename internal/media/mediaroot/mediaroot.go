// Package mediaroot finds the photo or document an annotation names in a
// folder the operator gives (the media root): annotations and bags carry
// the media's SHA-256 and URI, never its bytes, so whatever shows the
// media (the status page's gallery, mimlctl tail's passages) reads it
// from there, by a local name only and only when its bytes are the ones
// annotated.
package mediaroot

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/text"
)

// reindexEvery bounds how often a miss rebuilds the index of inline
// documents.
const reindexEvery = 30 * time.Second

// Root is a media root. Safe for concurrent use.
type Root struct {
	dir string

	mu sync.Mutex
	// byHash indexes the documents of the manifests at the top of dir by
	// the SHA-256 of their text (documents sent inline carry no file
	// name); indexedAt is when it was last built.
	byHash    map[string]docRef
	indexedAt time.Time
}

type docRef struct{ manifest, id string }

// New returns the media root dir.
func New(dir string) *Root { return &Root{dir: dir} }

// Dir returns the root's folder.
func (r *Root) Dir() string { return r.dir }

// Read reads the file md names under the root (at most limit bytes) and
// checks it is the one annotated.
func (r *Root) Read(md *media.Media, limit int) ([]byte, error) {
	rel := filepath.FromSlash(md.URI)
	if md.URI == "" || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("media %q is not a file name under the media root", md.URI)
	}
	f, err := os.Open(filepath.Join(r.dir, rel))
	if err != nil {
		return nil, fmt.Errorf("media %q not under the media root %s: %w", md.URI, r.dir, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > limit {
		return nil, fmt.Errorf("media %q: more than %d bytes", md.URI, limit)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != md.SHA256 {
		return nil, fmt.Errorf("media %q under %s is not the one annotated (SHA-256 differs)", md.URI, r.dir)
	}
	return raw, nil
}

// Document returns the document md names: the file its URI names under
// the root, or, for a document sent inline (no URI), the one of a manifest
// (*.jsonl) at the top of the root whose text has md's SHA-256.
func (r *Root) Document(md *media.Media) (string, error) {
	if md.URI != "" {
		raw, err := r.Read(md, text.MaxDocumentBytes)
		if err != nil {
			return "", err
		}
		return string(raw), nil
	}
	return r.inline(md.SHA256)
}

// inline finds the document of hash sum in the manifests at the top of the
// root, rebuilding its index at most every reindexEvery.
func (r *Root) inline(sum string) (string, error) {
	r.mu.Lock()
	ref, ok := r.byHash[sum]
	if !ok && (r.byHash == nil || time.Since(r.indexedAt) > reindexEvery) {
		r.byHash = r.index()
		r.indexedAt = time.Now()
		ref, ok = r.byHash[sum]
	}
	r.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("a document sent inline whose text (SHA-256 %.12s) is in no manifest under the media root %s", sum, r.dir)
	}
	s, err := manifestText(ref.manifest, ref.id)
	if err != nil {
		return "", err
	}
	if h := sha256.Sum256([]byte(s)); hex.EncodeToString(h[:]) != sum {
		return "", fmt.Errorf("document %s of %s changed since it was indexed", ref.id, ref.manifest)
	}
	return s, nil
}

// manifestLine is what the index reads of a document manifest's line.
type manifestLine struct {
	ID   string  `json:"id"`
	Text *string `json:"text"`
}

func (r *Root) index() map[string]docRef {
	out := map[string]docRef{}
	paths, _ := filepath.Glob(filepath.Join(r.dir, "*.jsonl"))
	for _, p := range paths {
		_ = eachLine(p, func(l manifestLine) bool {
			if l.Text != nil {
				h := sha256.Sum256([]byte(*l.Text))
				out[hex.EncodeToString(h[:])] = docRef{manifest: p, id: l.ID}
			}
			return true
		})
	}
	return out
}

func manifestText(path, id string) (string, error) {
	var found *string
	err := eachLine(path, func(l manifestLine) bool {
		if l.ID == id && l.Text != nil {
			found = l.Text
			return false
		}
		return true
	})
	if err != nil {
		return "", err
	}
	if found == nil {
		return "", fmt.Errorf("document %s is no longer in %s", id, path)
	}
	return *found, nil
}

// eachLine calls fn with each JSON line of path that decodes, until fn
// returns false.
func eachLine(path string, fn func(manifestLine) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, text.MaxDocumentBytes+1<<16)
	for sc.Scan() {
		var l manifestLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if !fn(l) {
			return nil
		}
	}
	return sc.Err()
}

package text

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// ErrManifest marks a malformed document manifest line.
var ErrManifest = errors.New("bad document manifest")

// MaxDocumentBytes bounds one document read from a manifest.
const MaxDocumentBytes = 8 << 20

// GTPassage is a ground-truth passage of a manifest document: a span in
// code points (end exclusive) and its class. Only evaluation reads it.
type GTPassage struct {
	Start  int    `json:"start"`
	End    int    `json:"end"`
	Label  string `json:"label"`
	Source string `json:"source,omitempty"`
}

// Entry is one line of a document manifest: the document's text (inline,
// or a file relative to the manifest's folder), its optional labels, and
// optional ground-truth passages.
type Entry struct {
	ID       string      `json:"id"`
	Text     string      `json:"text,omitempty"`
	Path     string      `json:"path,omitempty"`
	Labels   []string    `json:"labels,omitempty"`
	Passages []GTPassage `json:"passages,omitempty"`
}

// ReadManifestFile reads a JSON-lines document manifest; paths resolve
// against its folder.
func ReadManifestFile(path string) ([]Entry, error) {
	return readManifestFile(path, true)
}

// ReadManifestLines reads a manifest without loading its "path"
// documents (their Text stays empty, their spans unchecked): for a door
// that reads each file itself and dead-letters a bad one instead of
// stopping.
func ReadManifestLines(path string) ([]Entry, error) {
	return readManifestFile(path, false)
}

func readManifestFile(path string, load bool) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	es, err := readManifest(f, filepath.Dir(path), load)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return es, nil
}

// ReadManifest reads manifest lines, loading each "path" document from
// dir, and checks each document's UTF-8 and ground-truth spans.
func ReadManifest(r io.Reader, dir string) ([]Entry, error) { return readManifest(r, dir, true) }

func readManifest(r io.Reader, dir string, load bool) ([]Entry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 2*MaxDocumentBytes)
	var out []Entry
	seen := map[string]bool{}
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		// encoding/json would replace invalid bytes by U+FFFD silently.
		if err := CheckUTF8(string(sc.Bytes())); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		var e Entry
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("line %d: %w: %w", line, ErrManifest, err)
		}
		if e.Path != "" && e.Text == "" && !load {
			// Left for the caller to read.
		} else if err := e.load(dir); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if e.ID == "" {
			e.ID = fmt.Sprintf("doc-%d", line)
		}
		if seen[e.ID] {
			return nil, fmt.Errorf("line %d: %w: id %q repeated", line, ErrManifest, e.ID)
		}
		seen[e.ID] = true
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// load reads a path document and checks the text and the spans.
func (e *Entry) load(dir string) error {
	switch {
	case e.Text != "" && e.Path != "":
		return fmt.Errorf("%w: %q has both text and path", ErrManifest, e.ID)
	case e.Path != "":
		b, err := readBounded(filepath.Join(dir, filepath.FromSlash(e.Path)))
		if err != nil {
			return fmt.Errorf("%w: %q: %w", ErrManifest, e.ID, err)
		}
		e.Text = string(b)
	case e.Text == "":
		return fmt.Errorf("%w: %q has neither text nor path", ErrManifest, e.ID)
	}
	if err := CheckUTF8(e.Text); err != nil {
		return fmt.Errorf("%q: %w", e.ID, err)
	}
	n := utf8.RuneCountInString(e.Text)
	for i, p := range e.Passages {
		if p.Start < 0 || p.End < p.Start || p.End > n || (i > 0 && p.Start < e.Passages[i-1].End) || p.Label == "" {
			return fmt.Errorf("%w: %q passage %d [%d, %d) %q outside the %d code points, out of order or unlabeled",
				ErrManifest, e.ID, i, p.Start, p.End, p.Label, n)
		}
	}
	return nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxDocumentBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxDocumentBytes {
		return nil, fmt.Errorf("document larger than %d bytes", MaxDocumentBytes)
	}
	return b, nil
}

// IsManifest reports whether path is a JSON-lines manifest whose
// first line names a document ("text" or "path", and no "image").
func IsManifest(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 2*MaxDocumentBytes)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var probe struct {
			Text  *string `json:"text"`
			Path  *string `json:"path"`
			Image *string `json:"image"`
		}
		return json.Unmarshal(sc.Bytes(), &probe) == nil && (probe.Text != nil || probe.Path != nil) && probe.Image == nil
	}
	return false
}

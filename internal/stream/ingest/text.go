package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/textbag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// PublishDocuments cuts documents into passages and featurizes them
// (textbag.Bag), and publishes their bags with their provenance as
// PublishPhotos does. A document that is not UTF-8, too large, or names a
// label outside classes is dead-lettered with its reason and returned; the
// dead letter's original is orig[i] (its manifest line without the text,
// or its file name), never the document.
func (p *Publisher) PublishDocuments(ctx context.Context, f text.Featurizer, classes []string, docs []textbag.Doc, orig [][]byte) ([]Rejection, error) {
	if len(orig) != len(docs) {
		return nil, fmt.Errorf("publish documents: %d originals for %d documents", len(orig), len(docs))
	}
	return p.publishMedia(ctx, orig, func(i int) (*wire.BagMessage, error) {
		d := docs[i]
		if d.Labels != nil && !p.KeepLabels(d.ID) {
			d.Labels = nil
		}
		return p.documentBag(ctx, d, f, classes)
	}, func(i int) string { return docs[i].ID })
}

// documentBatch is how many documents are featurized and published at once.
const documentBatch = 256

// textExts are the file name endings a folder of documents is read by.
var textExts = []string{".txt", ".text"}

// isDocumentFolder reports whether the folder at path holds a plain-text
// file (and so is read as documents, not photos).
func isDocumentFolder(path string) bool {
	entries, err := os.ReadDir(path)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() && slices.Contains(textExts, strings.ToLower(filepath.Ext(e.Name()))) {
			return true
		}
	}
	return false
}

// ingestDocuments publishes the documents of a manifest (text.Entry lines:
// inline text or a file relative to the manifest, optional labels; the
// ground-truth passages are for evaluation and not sent) or of a folder
// (every .txt file, by name, unlabeled), cut into passages and
// featurized with the service's default text featurizer. A document file
// that is not UTF-8 or is too large is dead-lettered (reasons media,
// oversize); a manifest line that is not UTF-8 is a malformed manifest
// and stops the run naming its line (its raw bytes are checked before
// JSON decoding, which would replace them silently).
func (s *Service) ingestDocuments(ctx context.Context, path string, folder bool) error {
	var entries []text.Entry
	dir := path
	if folder {
		files, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		for _, e := range files {
			if !e.IsDir() && slices.Contains(textExts, strings.ToLower(filepath.Ext(e.Name()))) {
				entries = append(entries, text.Entry{ID: e.Name(), Path: e.Name()})
			}
		}
	} else {
		var err error
		if entries, err = text.ReadManifestLines(path); err != nil {
			return err
		}
		dir = filepath.Dir(path)
	}
	if s.cfg.Limit > 0 && s.cfg.Limit < len(entries) {
		entries = entries[:s.cfg.Limit]
	}
	classes := text.Classes(dir, entries)
	f := defaultTextFeaturizer()
	load := func(e text.Entry) (textbag.Doc, []byte, error) {
		d := textbag.Doc{ID: e.ID, URI: e.Path, Labels: e.Labels, Data: []byte(e.Text)}
		if e.Path != "" {
			// Files are read here, bounded, so that one that is not
			// UTF-8 or too large is dead-lettered, not fatal.
			var err error
			if d.Data, err = readBounded(filepath.Join(dir, filepath.FromSlash(e.Path)), text.MaxDocumentBytes); err != nil {
				return textbag.Doc{}, nil, err
			}
		}
		orig, _ := json.Marshal(text.Entry{ID: e.ID, Path: e.Path, Labels: e.Labels})
		return d, orig, nil
	}
	return publishInBatches(ctx, s, "document", path, entries, documentBatch, load,
		func(ctx context.Context, docs []textbag.Doc, orig [][]byte) ([]Rejection, error) {
			return s.pub.PublishDocuments(ctx, f, classes, docs, orig)
		})
}

// defaultTextFeaturizer is the text featurizer of every door,
// text.DefaultFeaturizer (paragraphs, long ones cut into windows; 2^17
// hashed features; log term weights), with a term cache of up to a million
// word forms (stemming is half the cost of a cold document).
func defaultTextFeaturizer() text.Featurizer {
	f := text.DefaultFeaturizer()
	f.Terms = text.NewTermCache(1 << 20)
	return f
}

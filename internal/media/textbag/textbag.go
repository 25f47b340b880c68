// Package textbag turns a document into the wire form of its bag: its
// passages' sparse vectors (package text), each with its span in code
// points and in bytes, the document's identity (SHA-256, size, name) and
// the featurizer's. It is the text side of what package photobag is for
// photos, shared by every door that takes documents.
package textbag

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/schemas"
)

// ContentType is the media type a document is read as.
const ContentType = "text/plain; charset=utf-8"

// Doc is one document as a door received it.
type Doc struct {
	ID     string
	URI    string // where the bytes came from (manifest-relative path, file name, POST name)
	Data   []byte
	Labels []string // nil: unlabeled
}

// Bag featurizes d with f (normalized) into a bag message. A document that
// is not UTF-8 is refused with reason media and the offset of its first
// bad byte, one over text.MaxDocumentBytes with reason oversize, a label
// outside classes with reason vocabulary: wire.RejectErrors, ready to
// dead-letter.
func Bag(d Doc, f text.Featurizer, classes []string) (*wire.BagMessage, error) {
	if len(d.Data) > text.MaxDocumentBytes {
		return nil, wire.Reject(wire.ReasonOversize, fmt.Errorf("document %q (%s): more than %d bytes", d.ID, d.URI, text.MaxDocumentBytes))
	}
	doc, err := f.Featurize(string(d.Data))
	if errors.Is(err, text.ErrInvalidUTF8) {
		return nil, wire.Reject(wire.ReasonMedia, fmt.Errorf("document %q (%s): %w", d.ID, d.URI, err))
	}
	if err != nil {
		return nil, err // the featurizer's settings, not the document
	}
	if len(doc.Passages) == 0 {
		return nil, wire.Reject(wire.ReasonMedia, fmt.Errorf("document %q (%s): no word, so no passage", d.ID, d.URI))
	}
	md := media.Identify(d.Data, d.URI, ContentType)
	id := f.Identity()
	m := &wire.BagMessage{SchemaVersion: schemas.Version, ID: d.ID, Source: "media", Dim: f.Dim,
		SparseInstances: doc.Instances, Media: &md, Featurizer: &id, Regions: doc.Regions()}
	for i, v := range m.SparseInstances {
		// An instance without a term (a passage of stop words) is sent
		// with empty arrays: null is not an array to the schema.
		if v.Idx == nil {
			m.SparseInstances[i].Idx, m.SparseInstances[i].Val = []int32{}, []float64{}
		}
	}
	if err := label(m, d, classes); err != nil {
		return nil, err
	}
	return m, nil
}

// label gives m d's labels over the vocabulary classes.
func label(m *wire.BagMessage, d Doc, classes []string) error {
	if d.Labels == nil {
		return nil
	}
	m.Classes = classes
	m.Labels = []int{}
	for _, l := range d.Labels {
		k := slices.Index(classes, l)
		if k < 0 {
			return wire.Reject(wire.ReasonVocabulary, fmt.Errorf("document %q: label %q is not a class (%d classes)", d.ID, l, len(classes)))
		}
		m.Labels = append(m.Labels, k)
	}
	slices.Sort(m.Labels)
	m.Labels = slices.Compact(m.Labels)
	return nil
}

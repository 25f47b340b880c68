// Package photobag turns a photo into the bag the service streams: its
// regions' features as instances, with the photo's identity, the
// featurizer's and each region's box and mask (the provenance of package
// media), and the manifests that name photos (JSON lines with an image
// path, labels and, for evaluation only, ground truth).
package photobag

import (
	"fmt"
	"slices"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/schemas"
)

// Photo is one photo to make into a bag.
type Photo struct {
	ID   string
	URI  string // where the bytes came from (manifest-relative path, POST name)
	Data []byte
	// Labels are class names from the vocabulary; nil: unlabeled.
	Labels []string
}

// Bag decodes p within lim, featurizes it with f and returns its bag
// message over the vocabulary classes. A photo that cannot be read is an
// error with reason wire.ReasonMedia (or wire.ReasonOversize beyond the
// byte limit), a label outside the vocabulary one with
// wire.ReasonVocabulary: the dead-letter reasons of the door it came by.
func Bag(p Photo, f *imagefeat.Featurizer, classes []string, lim photo.Limits) (*wire.BagMessage, error) {
	img, err := photo.Decode(p.Data, lim)
	if err != nil {
		reason := wire.ReasonMedia
		if photo.Reason(err) == "oversize" {
			reason = wire.ReasonOversize
		}
		return nil, wire.Reject(reason, fmt.Errorf("photo %q (%s): %w", p.ID, p.URI, err))
	}
	res, err := f.Featurize(img)
	if err != nil {
		return nil, wire.Reject(wire.ReasonMedia, fmt.Errorf("photo %q: %w", p.ID, err))
	}
	md := media.Identify(p.Data, p.URI, photo.ContentType(img.Format))
	id := f.Identity()
	m := &wire.BagMessage{ID: p.ID, Instances: res.Instances, Media: &md, Featurizer: &id, Regions: res.Regions}
	if err := finish(m, p, classes); err != nil {
		return nil, err
	}
	return m, nil
}

// finish fills in what a photo's bag has besides its regions: the
// envelope and the labels over the vocabulary.
func finish(m *wire.BagMessage, p Photo, classes []string) error {
	m.SchemaVersion, m.Source, m.Dim = schemas.Version, "media", imagefeat.Dim
	if p.Labels != nil {
		m.Classes = classes
		m.Labels = []int{}
		for _, l := range p.Labels {
			k := slices.Index(classes, l)
			if k < 0 {
				return wire.Reject(wire.ReasonVocabulary, fmt.Errorf("photo %q: label %q is not a class (%d classes)", p.ID, l, len(classes)))
			}
			m.Labels = append(m.Labels, k)
		}
		slices.Sort(m.Labels)
		m.Labels = slices.Compact(m.Labels)
	}
	return nil
}

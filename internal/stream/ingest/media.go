package ingest

import (
	"context"
	"fmt"

	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// PublishPhotos decodes, segments and featurizes photos (photobag.Bag) and
// publishes their bags, with their provenance, as PublishDataset does
// (label fraction, both topics, acknowledgements). A photo that cannot be
// read (corrupt, unsupported, over the byte or pixel limit) or names a
// label outside classes is dead-lettered with its reason and returned; the
// dead letter's original is its manifest line or name (orig[i]), never the
// image. Media bags go as JSON whatever the wire format: the binary
// encoding has no provenance fields.
func (p *Publisher) PublishPhotos(ctx context.Context, f *imagefeat.Featurizer, classes []string, lim photo.Limits, photos []photobag.Photo, orig [][]byte) ([]Rejection, error) {
	if len(orig) != len(photos) {
		return nil, fmt.Errorf("publish photos: %d originals for %d photos", len(orig), len(photos))
	}
	msgs := make([]*wire.BagMessage, len(photos))
	errs := make([]error, len(photos))
	raws := make([][]byte, len(photos))
	for i, ph := range photos {
		if ph.Labels != nil && !p.KeepLabels(ph.ID) {
			ph.Labels = nil
		}
		m, err := photobag.Bag(ph, f, classes, lim)
		if err == nil {
			raws[i], err = m.AppendJSON(nil)
		}
		if err != nil {
			errs[i], raws[i] = err, orig[i]
			continue
		}
		msgs[i] = m
	}
	return p.publish(ctx, raws, wire.FormatJSON, false, func(i int) (*wire.BagMessage, error) {
		if errs[i] != nil {
			return nil, errs[i]
		}
		return p.validator.CheckEncoded(msgs[i], len(raws[i]))
	}, func(i int) string { return photos[i].ID })
}

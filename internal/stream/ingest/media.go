package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/textbag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// PublishPhotos decodes, segments and featurizes photos (photobag.Bag) and
// publishes their bags, with their provenance, as PublishDataset does
// (label fraction, both topics, acknowledgements). A photo that cannot be
// read (corrupt, unsupported, over the byte or pixel limit) or names a
// label outside classes is dead-lettered with its reason and returned; the
// dead letter's original is its manifest line or name (orig[i]), never the
// image. Bags go in the configured wire format, provenance included.
func (p *Publisher) PublishPhotos(ctx context.Context, f *imagefeat.Featurizer, classes []string, lim photo.Limits, photos []photobag.Photo, orig [][]byte) ([]Rejection, error) {
	if len(orig) != len(photos) {
		return nil, fmt.Errorf("publish photos: %d originals for %d photos", len(orig), len(photos))
	}
	return p.publishMedia(ctx, orig, func(i int) (*wire.BagMessage, error) {
		ph := photos[i]
		if ph.Labels != nil && !p.KeepLabels(ph.ID) {
			ph.Labels = nil
		}
		return p.photoBag(ctx, ph, f, classes, lim)
	}, func(i int) string { return photos[i].ID })
}

// publishMedia publishes the bags build makes of len(orig) photos or
// documents in the configured wire format (built as JSON, transcoded when
// the format is the binary one, as PublishRaw does). One that build
// refuses is rejected with build's error and dead-lettered with orig[i]
// (JSON: a manifest line or a name) as its original.
func (p *Publisher) publishMedia(ctx context.Context, orig [][]byte, build func(i int) (*wire.BagMessage, error), id func(i int) string) ([]Rejection, error) {
	msgs := make([]*wire.BagMessage, len(orig))
	errs := make([]error, len(orig))
	raws := make([][]byte, len(orig))
	for i := range orig {
		m, err := build(i)
		if err == nil {
			raws[i], err = m.AppendJSON(nil)
		}
		if err != nil {
			errs[i], raws[i] = err, orig[i]
			continue
		}
		msgs[i] = m
	}
	_, rej, err := p.publish(ctx, raws, wire.FormatJSON, p.cfg.Format == wire.FormatProtobuf, func(i int) (*wire.BagMessage, error) {
		if errs[i] != nil {
			return nil, errs[i]
		}
		return p.validator.CheckEncoded(msgs[i], len(raws[i]))
	}, id)
	return rej, err
}

// photoBatch is how many photos are featurized and published at once.
const photoBatch = 32

// imageExts are the file name endings a folder of photos is read by.
var imageExts = []string{".jpg", ".jpeg", ".png", ".bmp", ".webp"}

// ingestPhotos publishes the photos of a manifest (JSON lines naming an
// image relative to the manifest's folder, with optional labels) or of a
// folder (every image file in it, by name, unlabeled), segmented and
// featurized with the service's default featurizer.
func (s *Service) ingestPhotos(ctx context.Context, path string, folder bool) error {
	var lines []photobag.Line
	dir := path
	var err error
	if folder {
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if !e.IsDir() && slices.Contains(imageExts, strings.ToLower(filepath.Ext(e.Name()))) {
				lines = append(lines, photobag.Line{ID: e.Name(), Image: e.Name()})
			}
		}
	} else if lines, dir, err = photobag.ReadManifest(path); err != nil {
		return err
	}
	if s.cfg.Limit > 0 && s.cfg.Limit < len(lines) {
		lines = lines[:s.cfg.Limit]
	}
	classes, err := photobag.Classes(dir, lines)
	if err != nil {
		return err
	}
	f, err := imagefeat.New(imagefeat.DefaultParams())
	if err != nil {
		return err
	}
	lim := photo.Limits{}
	load := func(l photobag.Line) (photobag.Photo, []byte, error) {
		data, err := readBounded(filepath.Join(dir, l.Image), photo.DefaultMaxBytes)
		if err != nil {
			return photobag.Photo{}, nil, err
		}
		orig, _ := json.Marshal(photobag.Line{ID: l.ID, Image: l.Image, Labels: l.Labels})
		return photobag.Photo{ID: l.ID, URI: l.Image, Data: data, Labels: l.Labels}, orig, nil
	}
	return publishInBatches(ctx, s, "photo", path, lines, photoBatch, load,
		func(ctx context.Context, photos []photobag.Photo, orig [][]byte) ([]Rejection, error) {
			return s.pub.PublishPhotos(ctx, f, classes, lim, photos, orig)
		})
}

// readBounded reads at most limit+1 bytes of the file at path: enough for
// the decoder to refuse an oversize photo without holding all of it.
func readBounded(path string, limit int) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, int64(limit)+1))
}

// photoBag is photobag.Bag through the media cache when there is one,
// counting hits and misses; a failing cache is logged and passed by.
func (p *Publisher) photoBag(ctx context.Context, ph photobag.Photo, f *imagefeat.Featurizer, classes []string, lim photo.Limits) (*wire.BagMessage, error) {
	if p.cfg.MediaCache == nil {
		return photobag.Bag(ph, f, classes, lim)
	}
	m, hit, cerr, err := photobag.CachedBag(ctx, p.cfg.MediaCache, ph, f, classes, lim)
	p.countCache(ctx, "photo", ph.ID, hit, cerr)
	return m, err
}

// documentBag is textbag.Bag through the media cache when there is one,
// as photoBag is for photos.
func (p *Publisher) documentBag(ctx context.Context, d textbag.Doc, f text.Featurizer, classes []string) (*wire.BagMessage, error) {
	if p.cfg.MediaCache == nil {
		return textbag.Bag(d, f, classes)
	}
	m, hit, cerr, err := textbag.CachedBag(ctx, p.cfg.MediaCache, d, f, classes)
	p.countCache(ctx, "document", d.ID, hit, cerr)
	return m, err
}

// countCache counts one media cache lookup and logs a cache failure.
func (p *Publisher) countCache(ctx context.Context, medium, id string, hit bool, cerr error) {
	if cerr != nil {
		p.cfg.Obs.Logger.Warn("media cache", medium, id, "err", cerr)
	}
	result := "miss"
	if hit {
		result = "hit"
	}
	p.m.mediaCache.Add(ctx, 1, metric.WithAttributes(attribute.String("medium", medium), attribute.String("result", result)))
}

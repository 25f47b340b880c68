package textbag

import (
	"context"

	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/schemas"
)

// CachedBag is Bag through the feature cache (featurecache.GetMedia, keyed
// by f's identity and the text's SHA-256): a document already cut and
// hashed by f, by any door or replica, is not featurized again. hit
// reports which. A cache that fails is reported in cacheErr for the caller
// to log and passed by: the document is featurized as if it had missed.
func CachedBag(ctx context.Context, c featurecache.Raw, d Doc, f text.Featurizer, classes []string) (m *wire.BagMessage, hit bool, cacheErr, err error) {
	if len(d.Data) <= text.MaxDocumentBytes {
		md := media.Identify(d.Data, d.URI, ContentType)
		id := f.Identity()
		e, ok, gerr := featurecache.GetMedia(ctx, c, id, md.SHA256)
		cacheErr = gerr
		if ok {
			m = &wire.BagMessage{SchemaVersion: schemas.Version, ID: d.ID, Source: "media", Dim: f.Dim,
				SparseInstances: e.Sparse, Media: &md, Featurizer: &id, Regions: e.Regions}
			if err := label(m, d, classes); err != nil {
				return nil, true, cacheErr, err
			}
			return m, true, cacheErr, nil
		}
	}
	m, err = Bag(d, f, classes)
	if err != nil {
		return nil, false, cacheErr, err
	}
	perr := featurecache.PutMedia(ctx, c, *m.Featurizer, m.Media.SHA256, featurecache.Featurized{ContentType: m.Media.ContentType, Sparse: m.SparseInstances, Regions: m.Regions})
	if cacheErr == nil {
		cacheErr = perr
	}
	return m, false, cacheErr, nil
}

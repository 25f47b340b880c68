package photobag

import (
	"context"

	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// CachedBag is Bag through the feature cache (featurecache.GetMedia,
// keyed by f's identity and the bytes' SHA-256): a photo already
// featurized by f, by any door or replica, is not decoded nor featurized
// again. hit reports which. A cache that fails is reported in cacheErr
// for the caller to log and passed by: the photo is featurized as if it
// had missed.
func CachedBag(ctx context.Context, c featurecache.Raw, p Photo, f *imagefeat.Featurizer, classes []string, lim photo.Limits) (m *wire.BagMessage, hit bool, cacheErr, err error) {
	md := media.Identify(p.Data, p.URI, "")
	id := f.Identity()
	e, ok, cacheErr := featurecache.GetMedia(ctx, c, id, md.SHA256)
	if ok {
		md.ContentType = e.ContentType
		m = &wire.BagMessage{ID: p.ID, Instances: e.Instances, Regions: e.Regions, Media: &md, Featurizer: &id}
		if err := finish(m, p, classes); err != nil {
			return nil, true, cacheErr, err
		}
		return m, true, cacheErr, nil
	}
	m, err = Bag(p, f, classes, lim)
	if err != nil {
		return nil, false, cacheErr, err
	}
	perr := featurecache.PutMedia(ctx, c, id, md.SHA256, featurecache.Featurized{ContentType: m.Media.ContentType, Instances: m.Instances, Regions: m.Regions})
	if cacheErr == nil {
		cacheErr = perr
	}
	return m, false, cacheErr, nil
}

package photobag

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// Cache holds featurized photos by key (featurestore.Cache: Redis, shared
// by every door and replica).
type Cache interface {
	GetRaw(ctx context.Context, key string) ([]byte, bool, error)
	PutRaw(ctx context.Context, key string, v []byte) error
}

// CacheKey names a photo featurized by f: the featurizer's canonical form
// and the bytes' SHA-256. A photo sent twice, by any door, has one key.
func CacheKey(f media.Featurizer, m media.Media) string {
	return "media:" + f.String() + ":" + m.SHA256
}

// cached is what the cache keeps of a featurized photo.
type cached struct {
	ContentType string         `json:"content_type"`
	Instances   [][]float64    `json:"instances"`
	Regions     []media.Region `json:"regions"`
}

// CachedBag is Bag through a cache: a photo already featurized by f (the
// same bytes, by hash) is not decoded nor featurized again. hit reports
// which. A cache that fails is logged by the caller and passed by: the
// photo is featurized as if it had missed.
func CachedBag(ctx context.Context, c Cache, p Photo, f *imagefeat.Featurizer, classes []string, lim photo.Limits) (m *wire.BagMessage, hit bool, cacheErr, err error) {
	md := media.Identify(p.Data, p.URI, "")
	key := CacheKey(f.Identity(), md)
	if raw, ok, gerr := c.GetRaw(ctx, key); gerr != nil {
		cacheErr = gerr
	} else if ok {
		var e cached
		if jerr := json.Unmarshal(raw, &e); jerr != nil {
			cacheErr = fmt.Errorf("cache entry %s: %w", key, jerr)
		} else {
			md.ContentType = e.ContentType
			id := f.Identity()
			m = &wire.BagMessage{ID: p.ID, Instances: e.Instances, Regions: e.Regions, Media: &md, Featurizer: &id}
			if err := finish(m, p, classes); err != nil {
				return nil, true, cacheErr, err
			}
			return m, true, cacheErr, nil
		}
	}
	m, err = Bag(p, f, classes, lim)
	if err != nil {
		return nil, false, cacheErr, err
	}
	raw, jerr := json.Marshal(cached{ContentType: m.Media.ContentType, Instances: m.Instances, Regions: m.Regions})
	if jerr == nil {
		jerr = c.PutRaw(ctx, key, raw)
	}
	if jerr != nil && cacheErr == nil {
		cacheErr = jerr
	}
	return m, false, cacheErr, nil
}

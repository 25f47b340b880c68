package featurecache

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/mil"
)

// Raw is the part of a Cache the media doors use: a *Cache, or a wrapper
// of one (a test counting what is stored).
type Raw interface {
	GetRaw(ctx context.Context, key string) ([]byte, bool, error)
	PutRaw(ctx context.Context, key string, v []byte) error
}

var _ Raw = (*Cache)(nil)

// MediaKey names the bytes of SHA-256 sha featurized by f: the
// featurizer's canonical form and the hash. A photo or a document sent
// twice, by any door, has one key; the same bytes through another
// featurizer (other parameters, another version) another.
func MediaKey(f media.Featurizer, sha string) string {
	return "media:" + f.String() + ":" + sha
}

// Featurized is what the cache keeps of featurized media: what a bag of
// it has besides its id, its labels and the bytes' name (URI).
type Featurized struct {
	ContentType string          `json:"content_type"`
	Instances   [][]float64     `json:"instances,omitempty"`
	Sparse      []mil.SparseVec `json:"sparse_instances,omitempty"`
	Regions     []media.Region  `json:"regions"`
}

// GetMedia returns the media of SHA-256 sha as f featurized it, when c
// holds it. An entry that does not decode is an error (the caller
// featurizes again, and PutMedia replaces it).
func GetMedia(ctx context.Context, c Raw, f media.Featurizer, sha string) (Featurized, bool, error) {
	key := MediaKey(f, sha)
	raw, ok, err := c.GetRaw(ctx, key)
	if err != nil || !ok {
		return Featurized{}, false, err
	}
	var e Featurized
	if err := json.Unmarshal(raw, &e); err != nil {
		return Featurized{}, false, fmt.Errorf("%w: media entry %s: %w", ErrCorrupt, key, err)
	}
	return e, true, nil
}

// PutMedia stores e as the media of SHA-256 sha featurized by f.
func PutMedia(ctx context.Context, c Raw, f media.Featurizer, sha string, e Featurized) error {
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return c.PutRaw(ctx, MediaKey(f, sha), raw)
}

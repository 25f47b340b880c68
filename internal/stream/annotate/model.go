package annotate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// ModelStore is the part of the model registry the annotator reads.
type ModelStore interface {
	Current(ctx context.Context) ([]byte, featurestore.VersionMeta, error)
	// Subscribe yields version ids as they become current. Delivery is at
	// most once, so the annotator also polls Current.
	Subscribe(ctx context.Context) (<-chan string, error)
}

// FeatureCache stores mapped instance vectors (featurecache.Cache).
type FeatureCache interface {
	Get(ctx context.Context, key string) ([]float64, bool, error)
	Put(ctx context.Context, key string, v []float64) error
}

// servedModel is one decoded model version as served by an annotator.
type servedModel struct {
	model  models.Model
	meta   featurestore.VersionMeta
	mapper models.FeatureMapper // nil when the model has nothing to cache
}

func decodeServed(kinds *models.Registry, blob []byte, meta featurestore.VersionMeta) (*servedModel, error) {
	m, err := kinds.Decode(blob)
	if err != nil {
		return nil, fmt.Errorf("decode model %s: %w", meta.Version, err)
	}
	s := &servedModel{model: m, meta: meta}
	if fm, ok := m.(models.FeatureMapper); ok && fm.FeatureSpace() != "" {
		s.mapper = fm
	}
	return s, nil
}

// instanceKey names the cached mapping of x in a feature space: a hash of the
// exact float bits, so equal vectors share an entry and different ones never
// collide in practice.
func instanceKey(space string, x []float64) string {
	h := sha256.New()
	var buf [8]byte
	for _, v := range x {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
		h.Write(buf[:])
	}
	return space + ":" + hex.EncodeToString(h.Sum(nil)[:16])
}

// cachedMapper wraps a feature cache with a circuit breaker: after a Redis
// error the cache is bypassed for a cool-down, so an outage costs one
// failed round trip, not one per instance.
type cachedMapper struct {
	cache    FeatureCache
	log      *slog.Logger
	cooldown time.Duration
	// timeout bounds each cache call (0: none): a hung Redis costs a bag
	// at most this before the breaker trips.
	timeout  time.Duration
	offUntil atomic.Int64 // unix nanoseconds
	hits     atomic.Int64
	misses   atomic.Int64
}

// DefaultCacheTimeout bounds a feature cache call (AnnotatorConfig.CacheTimeout):
// a Redis round trip on the same network takes well under a millisecond,
// and recomputing an instance's mapping is the fallback.
const DefaultCacheTimeout = 50 * time.Millisecond

func (c *cachedMapper) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.timeout)
}

func (c *cachedMapper) available() bool { return time.Now().UnixNano() >= c.offUntil.Load() }

func (c *cachedMapper) trip(err error) {
	if c.available() {
		c.log.Warn("feature cache unavailable; computing locally", "err", err, "retry_in", c.cooldown)
	}
	c.offUntil.Store(time.Now().Add(c.cooldown).UnixNano())
}

// annotate maps every instance (through the cache when it answers) and
// annotates the mapped bag. The instances of a sparse bag are mapped
// dense, of dimension dim, one at a time: the mapping takes dense rows,
// and the cache key is that of the same row sent dense, so both encodings
// of an instance share its entry.
func (c *cachedMapper) annotate(ctx context.Context, fm models.FeatureMapper, b *mil.Bag, dim int, mode models.Mode) (models.Annotation, error) {
	space := fm.FeatureSpace()
	mapped := make([][]float64, b.Len())
	for i := range mapped {
		var x []float64
		if b.Sparse != nil {
			x = b.Sparse[i].Dense(dim)
		} else {
			x = b.Instances[i]
		}
		var key string
		if c != nil && c.available() {
			key = instanceKey(space, x)
			cctx, cancel := c.callContext(ctx)
			v, ok, err := c.cache.Get(cctx, key)
			cancel()
			switch {
			case err != nil:
				c.trip(err)
			case ok:
				c.hits.Add(1)
				mapped[i] = v
				continue
			default:
				c.misses.Add(1)
			}
		}
		v, err := fm.MapInstance(x)
		if err != nil {
			return models.Annotation{}, err
		}
		mapped[i] = v
		if key != "" && c.available() {
			cctx, cancel := c.callContext(ctx)
			if err := c.cache.Put(cctx, key, v); err != nil {
				c.trip(err)
			}
			cancel()
		}
	}
	return fm.AnnotateMapped(ctx, b, mapped, mode)
}

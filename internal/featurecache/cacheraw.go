package featurecache

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// GetRaw returns the bytes stored under key by PutRaw; ok is false on a
// miss. It shares the cache's bounds and eviction with Get and Put: the
// media doors keep a featurized photo (its regions and features) here,
// keyed by featurizer and media hash.
func (c *Cache) GetRaw(ctx context.Context, key string) ([]byte, bool, error) {
	s, err := cacheGet.Run(ctx, c.rdb, c.keys(key), c.ttl.Milliseconds(), key).Text()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cache get %q: %w", key, err)
	}
	return []byte(s), true, nil
}

// PutRaw stores v under key.
func (c *Cache) PutRaw(ctx context.Context, key string, v []byte) error {
	err := cachePut.Run(ctx, c.rdb, c.keys(key),
		c.ttl.Milliseconds(), key, v, c.max, c.entryKey(""), c.maxBytes).Err()
	if err != nil {
		return fmt.Errorf("cache put %q: %w", key, err)
	}
	return nil
}

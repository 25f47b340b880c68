// Package featurecache is the service's bounded cache in Redis: mapped
// instance vectors for the annotators (Get, Put) and featurized media for
// every door that takes photos and documents (GetRaw, PutRaw, keyed by
// featurizer and media hash: MediaKey). It is apart from the model
// registry (package featurestore) so that ingest, which links no model
// code, may use it.
//
// Every key carries the hash tag "{prefix}" (KeyBase), so all keys of one
// cache hash to one Redis Cluster slot and its multi-key scripts stay
// legal on a cluster.
package featurecache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cache holds feature vectors in Redis under a TTL and a bound on the
// number of entries.
//
// Policy: least recently used, with a sliding TTL. Every Put and every hit
// refreshes the entry's TTL and moves it to the most recent end of an index
// (a sorted set scored by a logical clock, B:clock, so the order is exact
// even for operations in the same millisecond and across clients with
// skewed clocks). When a Put makes the index longer than maxEntries, the
// least recently used entries are deleted. Because the TTL slides with use,
// entries expire in index order, so index members whose entry already
// expired are always the first trimmed: live entries are evicted only when
// more than maxEntries of them exist. Each operation is one Lua script, so
// the bound holds under concurrency.
//
// A bound in bytes (WithMaxBytes) evicts the same way while the values'
// bytes exceed it: each entry's size is kept beside the index (B:size) and
// their sum in B:bytes, so the count stays exact when an entry expires
// before its index member is trimmed. A cache sharing its Redis with the
// model registry must be bounded so, below the Redis's maxmemory with room
// for the registry: under Redis's default noeviction policy a full Redis
// refuses every write, the registry's included.
//
// Values are little-endian IEEE-754 float64s, 8 bytes each; a stored value
// whose length is not a multiple of 8 is reported as ErrCorrupt, deleted,
// and never served.
type Cache struct {
	rdb      redis.UniversalClient
	base     string
	ttl      time.Duration
	max      int
	maxBytes int64
}

// WithMaxBytes bounds the bytes of the values the cache holds (<= 0: no
// bound) and returns c.
func (c *Cache) WithMaxBytes(n int64) *Cache {
	c.maxBytes = max(n, 0)
	return c
}

// New returns a cache whose keys start with "{prefix}" (default prefix
// "mimlstream:features"). ttl <= 0 disables expiry; maxEntries <= 0
// disables the size bound.
func New(rdb redis.UniversalClient, prefix string, ttl time.Duration, maxEntries int) *Cache {
	if ttl > 0 && ttl < time.Millisecond {
		ttl = time.Millisecond // Redis TTLs have millisecond resolution
	}
	return &Cache{rdb: rdb, base: KeyBase(prefix, "mimlstream:features"), ttl: ttl, max: maxEntries}
}

// ErrCorrupt marks a stored value the cache cannot have written.
var ErrCorrupt = errors.New("corrupt cache entry")

// KeyBase returns the key base for prefix (def when empty): the prefix in
// braces, so that it is the Redis Cluster hash tag of every key built on
// it. The model registry builds its keys on it too.
func KeyBase(prefix, def string) string {
	if prefix == "" {
		prefix = def
	}
	return "{" + prefix + "}"
}

func (c *Cache) entryKey(key string) string { return c.base + ":e:" + key }
func (c *Cache) indexKey() string           { return c.base + ":lru" }
func (c *Cache) clockKey() string           { return c.base + ":clock" }
func (c *Cache) sizeKey() string            { return c.base + ":size" }
func (c *Cache) bytesKey() string           { return c.base + ":bytes" }

// Both scripts take KEYS = {entry, index, clock, sizes, bytes} and
// ARGV[1] = ttl in ms (0: none), ARGV[2] = the entry's member name in the
// index.

// cacheGet returns the value and refreshes TTL and recency on a hit, and
// drops the stale index member and its size on a miss.
var cacheGet = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
  if redis.call('ZREM', KEYS[2], ARGV[2]) > 0 then
    local s = tonumber(redis.call('HGET', KEYS[4], ARGV[2]) or '0')
    redis.call('HDEL', KEYS[4], ARGV[2])
    if s > 0 then redis.call('DECRBY', KEYS[5], s) end
  end
  return false
end
local ttl = tonumber(ARGV[1])
local t = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[2], t, ARGV[2])
if ttl > 0 then
  for i = 1, 5 do redis.call('PEXPIRE', KEYS[i], ttl) end
end
return v
`)

// cachePut stores the value (ARGV[3]) and trims the index, least recent
// first, to ARGV[4] entries (0: unbounded) and while the values' bytes
// exceed ARGV[6] (0: unbounded; the newest entry stays even alone),
// deleting the evicted entries (ARGV[5] is the entry key prefix) and their
// sizes. It returns the number of entries evicted.
var cachePut = redis.NewScript(`
local ttl = tonumber(ARGV[1])
local old = tonumber(redis.call('HGET', KEYS[4], ARGV[2]) or '0')
if ttl > 0 then
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ttl)
else
  redis.call('SET', KEYS[1], ARGV[3])
end
local size = string.len(ARGV[3])
redis.call('HSET', KEYS[4], ARGV[2], size)
local total = redis.call('INCRBY', KEYS[5], size - old)
local t = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[2], t, ARGV[2])
if ttl > 0 then
  for i = 2, 5 do redis.call('PEXPIRE', KEYS[i], ttl) end
end
local max = tonumber(ARGV[4])
local maxBytes = tonumber(ARGV[6])
local n = redis.call('ZCARD', KEYS[2])
local evicted = 0
while (max > 0 and n > max) or (maxBytes > 0 and total > maxBytes and n > 1) do
  local m = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  redis.call('DEL', ARGV[5] .. m)
  redis.call('ZREM', KEYS[2], m)
  local s = tonumber(redis.call('HGET', KEYS[4], m) or '0')
  redis.call('HDEL', KEYS[4], m)
  total = redis.call('DECRBY', KEYS[5], s)
  n = n - 1
  evicted = evicted + 1
end
return evicted
`)

func (c *Cache) keys(key string) []string {
	return []string{c.entryKey(key), c.indexKey(), c.clockKey(), c.sizeKey(), c.bytesKey()}
}

// Get returns the vector stored under key; ok is false on a miss.
func (c *Cache) Get(ctx context.Context, key string) ([]float64, bool, error) {
	s, err := cacheGet.Run(ctx, c.rdb, c.keys(key), c.ttl.Milliseconds(), key).Text()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cache get %q: %w", key, err)
	}
	v, err := decodeFloats([]byte(s))
	if err != nil {
		// Drop the bad entry so the caller's recomputation can replace it.
		if derr := c.rdb.Del(ctx, c.entryKey(key)).Err(); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, false, fmt.Errorf("cache get %q: %w", key, err)
	}
	return v, true, nil
}

// Put stores v under key.
func (c *Cache) Put(ctx context.Context, key string, v []float64) error {
	err := cachePut.Run(ctx, c.rdb, c.keys(key),
		c.ttl.Milliseconds(), key, encodeFloats(v), c.max, c.entryKey(""), c.maxBytes).Err()
	if err != nil {
		return fmt.Errorf("cache put %q: %w", key, err)
	}
	return nil
}

func encodeFloats(v []float64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

func decodeFloats(b []byte) ([]float64, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("%w: cached value has %d bytes, not a multiple of 8", ErrCorrupt, len(b))
	}
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v, nil
}

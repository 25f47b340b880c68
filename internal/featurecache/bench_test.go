package featurecache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/embedded/redisserver"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/testsupport/realpart"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

// benchClient returns the real Redis when one answers, else the embedded
// one; the backend is part of the benchmark name.
func benchClient(b *testing.B) (redis.UniversalClient, string) {
	ctx, cancel := context.WithTimeout(b.Context(), 2*time.Second)
	defer cancel()
	if rdb, err := redisflag.Dial(ctx, redisflag.Options{Addr: redistest.Addr()}); err == nil {
		b.Cleanup(func() { _ = rdb.Close() })
		return rdb, "real"
	}
	if realpart.CI() {
		b.Fatalf("CI=true but no Redis answers at %s", redistest.Addr())
	}
	addr, stop, err := redisserver.Start()
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { _ = rdb.Close(); stop() })
	return rdb, "embedded"
}

// BenchmarkCache compares the cache's Get and Put (one Lua script each,
// maintaining the LRU index and sliding TTL) with a plain GET and SET PX of
// the same encoded vector: the ratio is the price of the size bound.
//
//	go test -run '^$' -bench BenchmarkCache -count 5 ./internal/featurecache
func BenchmarkCache(b *testing.B) {
	rdb, backend := benchClient(b)
	prefix := fmt.Sprintf("mimlstream-bench:%d", time.Now().UnixNano())
	b.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
	})
	ctx := b.Context()
	const keys = 1000
	for _, dim := range []int{16, 256} {
		v := make([]float64, dim)
		for i := range v {
			v[i] = float64(i) / 3
		}
		enc := encodeFloats(v)
		c := New(rdb, fmt.Sprintf("%s:%d", prefix, dim), time.Hour, keys/2)
		plain := func(i int) string { return fmt.Sprintf("%s:plain:%d:%d", prefix, dim, i%keys) }
		name := fmt.Sprintf("%s/dim=%d", backend, dim)
		b.Run(name+"/put/plain-SET", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if err := rdb.Set(ctx, plain(i), enc, time.Hour).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/put/cache", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if err := c.Put(ctx, fmt.Sprint(i%keys), v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/get/plain-GET", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				s, err := rdb.Get(ctx, plain(i)).Bytes()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := decodeFloats(s); err != nil {
					b.Fatal(err)
				}
			}
		})
		// Half the keys fit the bound, so about half the gets hit.
		b.Run(name+"/get/cache", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, _, err := c.Get(ctx, fmt.Sprint(i%keys)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

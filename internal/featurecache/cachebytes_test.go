package featurecache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

// refBytesLRU is the reference of a cache bounded in bytes: least recently
// used first out while the values' bytes exceed max, the newest kept even
// alone.
type refBytesLRU struct {
	max   int
	keys  []string // least recent first
	sizes map[string]int
}

func (l *refBytesLRU) total() int {
	n := 0
	for _, k := range l.keys {
		n += l.sizes[k]
	}
	return n
}

func (l *refBytesLRU) touch(k string) {
	l.keys = slices.DeleteFunc(l.keys, func(x string) bool { return x == k })
	l.keys = append(l.keys, k)
}

func (l *refBytesLRU) get(k string) bool {
	if !slices.Contains(l.keys, k) {
		return false
	}
	l.touch(k)
	return true
}

func (l *refBytesLRU) put(k string, size int) {
	l.sizes[k] = size
	l.touch(k)
	for l.total() > l.max && len(l.keys) > 1 {
		delete(l.sizes, l.keys[0])
		l.keys = l.keys[1:]
	}
}

func TestCacheBytesAgainstReference(t *testing.T) {
	redistest.ForEachBackend(t, testCacheBytesAgainstReference)
}

// testCacheBytesAgainstReference: a cache bounded in bytes (the feature
// cache filled a Redis shared with the registry until registry writes
// failed with OOM) holds what the reference holds after random Gets and
// Puts of values of random sizes, and the bytes it counts are those of its
// live values.
func testCacheBytesAgainstReference(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	const max = 400 // bytes: 1 to 8 values of up to 12 floats
	c := New(rdb, prefix, time.Hour, 0).WithMaxBytes(max)
	ref := refBytesLRU{max: max, sizes: map[string]int{}}
	rng := rand.New(rand.NewPCG(3, 7))
	for step := range 600 {
		k := fmt.Sprint("k", rng.IntN(12))
		if rng.IntN(2) == 0 {
			v := make([]float64, 1+rng.IntN(12))
			if err := c.Put(ctx, k, v); err != nil {
				t.Fatal(err)
			}
			ref.put(k, 8*len(v))
			continue
		}
		_, ok, err := c.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if want := ref.get(k); ok != want {
			t.Fatalf("step %d: Get(%s) hit = %v, reference says %v (holds %v)", step, k, ok, want, ref.keys)
		}
	}
	var live int64
	for i := range 12 {
		n, err := rdb.StrLen(ctx, c.entryKey(fmt.Sprint("k", i))).Result()
		if err != nil {
			t.Fatal(err)
		}
		live += n
	}
	counted, err := rdb.Get(ctx, c.bytesKey()).Int64()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bound %d bytes: %d bytes live in %d entries (reference %d in %d), %d counted", max, live, len(ref.keys), ref.total(), len(ref.keys), counted)
	if live != int64(ref.total()) || counted != live || live > max {
		t.Errorf("%d bytes live, %d counted; reference %d, bound %d", live, counted, ref.total(), max)
	}
}

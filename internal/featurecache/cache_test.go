package featurecache

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

func TestCacheRoundTrip(t *testing.T) { redistest.ForEachBackend(t, testCacheRoundTrip) }

func testCacheRoundTrip(t *testing.T, rdb redis.UniversalClient, prefix string) {
	long := make([]float64, 1000)
	for i := range long {
		long[i] = math.Sqrt(float64(i)) - 7
	}
	tests := []struct {
		name string
		v    []float64
	}{
		{"empty", []float64{}},
		{"one", []float64{0.1}},
		{"special values", []float64{math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
			math.Float64frombits(0x7ff8000000000bad), math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64}},
		{"long", long},
	}
	ctx := testCtx(t)
	c := New(rdb, prefix, time.Minute, 100)
	if _, ok, err := c.Get(ctx, "absent"); ok || err != nil {
		t.Fatalf("Get(absent) = %v, %v; want miss", ok, err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.Put(ctx, tc.name, tc.v); err != nil {
				t.Fatal(err)
			}
			got, ok, err := c.Get(ctx, tc.name)
			if err != nil || !ok {
				t.Fatalf("Get = %v, %v; want hit", ok, err)
			}
			if len(got) != len(tc.v) {
				t.Fatalf("got %d values, want %d", len(got), len(tc.v))
			}
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(tc.v[i]) {
					t.Errorf("value %d = %x, want %x (bit-exact)", i, math.Float64bits(got[i]), math.Float64bits(tc.v[i]))
				}
			}
		})
	}
	// Overwriting a key replaces its value.
	if err := c.Put(ctx, "one", []float64{2, 3}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := c.Get(ctx, "one"); !slices.Equal(got, []float64{2, 3}) {
		t.Errorf("after overwrite got %v", got)
	}
}

func TestCacheTTL(t *testing.T) { redistest.ForEachBackend(t, testCacheTTL) }

func testCacheTTL(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	const ttl = 100 * time.Millisecond
	c := New(rdb, prefix, ttl, 10)
	if err := c.Put(ctx, "k", []float64{1}); err != nil {
		t.Fatal(err)
	}
	if pttl := must(rdb.PTTL(ctx, c.entryKey("k")).Result())(t); pttl <= 0 || pttl > ttl {
		t.Errorf("PTTL after Put = %v, want in (0, %v]", pttl, ttl)
	}
	time.Sleep(3 * ttl)
	if _, ok, err := c.Get(ctx, "k"); ok || err != nil {
		t.Errorf("Get after TTL = %v, %v; want miss", ok, err)
	}

	// Sliding TTL: a hit restores the full TTL.
	long := New(rdb, prefix+":long", time.Hour, 10)
	if err := long.Put(ctx, "k", []float64{1}); err != nil {
		t.Fatal(err)
	}
	must(rdb.PExpire(ctx, long.entryKey("k"), time.Second).Result())(t) // as if aged
	if _, ok, err := long.Get(ctx, "k"); !ok || err != nil {
		t.Fatalf("Get = %v, %v; want hit", ok, err)
	}
	if pttl := must(rdb.PTTL(ctx, long.entryKey("k")).Result())(t); pttl < 30*time.Minute {
		t.Errorf("PTTL after hit = %v, want refreshed to ~1h", pttl)
	}

	// ttl 0: no expiry.
	forever := New(rdb, prefix+":forever", 0, 10)
	if err := forever.Put(ctx, "k", []float64{1}); err != nil {
		t.Fatal(err)
	}
	if pttl := must(rdb.PTTL(ctx, forever.entryKey("k")).Result())(t); pttl >= 0 {
		t.Errorf("PTTL with ttl 0 = %v, want none", pttl)
	}
}

// refLRU is the reference cache policy: least recently used first out.
type refLRU struct {
	max  int
	keys []string // least recent first
}

func (l *refLRU) touch(k string) {
	l.keys = slices.DeleteFunc(l.keys, func(x string) bool { return x == k })
	l.keys = append(l.keys, k)
}

func (l *refLRU) get(k string) bool {
	if !slices.Contains(l.keys, k) {
		return false
	}
	l.touch(k)
	return true
}

func (l *refLRU) put(k string) {
	l.touch(k)
	if len(l.keys) > l.max {
		l.keys = l.keys[len(l.keys)-l.max:]
	}
}

// TestCacheLRUAgainstReference drives random Get/Put sequences and
// compares every hit or miss with the reference LRU policy.
func TestCacheLRUAgainstReference(t *testing.T) {
	redistest.ForEachBackend(t, testCacheLRUAgainstReference)
}

func testCacheLRUAgainstReference(t *testing.T, rdb redis.UniversalClient, prefix string) {
	for _, max := range []int{1, 4, 7} {
		t.Run(fmt.Sprint("max=", max), func(t *testing.T) { testCacheLRU(t, rdb, fmt.Sprintf("%s:%d", prefix, max), max) })
	}
}

func testCacheLRU(t *testing.T, rdb redis.UniversalClient, prefix string, max int) {
	ctx := testCtx(t)
	c := New(rdb, prefix, time.Hour, max)
	ref := refLRU{max: max}
	rng := rand.New(rand.NewPCG(uint64(max), 7))
	for step := range 400 {
		k := fmt.Sprint("k", rng.IntN(10))
		if rng.IntN(2) == 0 {
			if err := c.Put(ctx, k, []float64{float64(step)}); err != nil {
				t.Fatal(err)
			}
			ref.put(k)
			continue
		}
		_, ok, err := c.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if want := ref.get(k); ok != want {
			t.Fatalf("max %d step %d: Get(%s) hit = %v, reference says %v (holds %v)", max, step, k, ok, want, ref.keys)
		}
	}
	live := 0
	for i := range 10 {
		live += int(must(rdb.Exists(ctx, c.entryKey(fmt.Sprint("k", i))).Result())(t))
	}
	if live != len(ref.keys) {
		t.Errorf("%d live entries, reference holds %d", live, len(ref.keys))
	}
	if n := must(rdb.ZCard(ctx, c.indexKey()).Result())(t); n > int64(max) {
		t.Errorf("index holds %d members, bound %d", n, max)
	}
}

// TestCacheBoundConcurrent checks the size bound under concurrent writers.
func TestCacheBoundConcurrent(t *testing.T) { redistest.ForEachBackend(t, testCacheBoundConcurrent) }

func testCacheBoundConcurrent(t *testing.T, rdb redis.UniversalClient, prefix string) {
	const max, writers, perWriter = 10, 8, 40
	ctx := testCtx(t)
	c := New(rdb, prefix, time.Hour, max)
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				errs <- c.Put(ctx, fmt.Sprintf("w%d-%d", w, i), []float64{float64(i)})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	live := 0
	for w := range writers {
		for i := range perWriter {
			live += int(must(rdb.Exists(ctx, c.entryKey(fmt.Sprintf("w%d-%d", w, i))).Result())(t))
		}
	}
	if live != max {
		t.Errorf("%d live entries after %d puts, want exactly %d", live, writers*perWriter, max)
	}
	if n := must(rdb.ZCard(ctx, c.indexKey()).Result())(t); n != max {
		t.Errorf("index holds %d members, want %d", n, max)
	}
}

func TestCacheCorruptValueRefused(t *testing.T) {
	redistest.ForEachBackend(t, testCacheCorruptValueRefused)
}

func testCacheCorruptValueRefused(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	c := New(rdb, prefix, time.Minute, 10)
	if err := c.Put(ctx, "k", []float64{1, 2}); err != nil {
		t.Fatal(err)
	}
	must(rdb.SetRange(ctx, c.entryKey("k"), 16, "x").Result())(t) // 17 bytes
	if v, ok, err := c.Get(ctx, "k"); !errors.Is(err, ErrCorrupt) || ok || v != nil {
		t.Fatalf("Get(corrupt) = %v, %v, %v; want ErrCorrupt", v, ok, err)
	}
	if _, ok, err := c.Get(ctx, "k"); ok || err != nil {
		t.Errorf("Get after corrupt entry = %v, %v; want a clean miss", ok, err)
	}
}

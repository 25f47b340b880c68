package featurecache

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

func TestMediaRoundTrip(t *testing.T) { redistest.ForEachBackend(t, testMediaRoundTrip) }

// testMediaRoundTrip: featurized media come back whole (features bit for
// bit, sparse instances, regions), under their featurizer and hash only:
// another featurizer's parameters or another hash miss; a corrupt entry
// is an error, not a hit.
func testMediaRoundTrip(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	c := New(rdb, prefix, time.Minute, 100)
	box := [4]int{0, 0, 1, 3}
	mask := media.RLE{Size: [2]int{3, 4}, Counts: []int{0, 3, 9}}
	photo := Featurized{ContentType: "image/png", Instances: [][]float64{{1.0 / 3, math.SmallestNonzeroFloat64, math.Copysign(0, -1)}, {1e300, 2, 3}},
		Regions: []media.Region{{BBox: &box, Mask: &mask}, {}}}
	doc := Featurized{ContentType: "text/plain; charset=utf-8", Sparse: []mil.SparseVec{{Idx: []int32{3, 70000}, Val: []float64{0.6, -0.8}}},
		Regions: []media.Region{{Span: &media.Span{Start: 0, End: 9}, ByteSpan: &media.Span{Start: 0, End: 11}}}}
	pf := media.Featurizer{Name: "photo-regions", Version: "1", Params: map[string]string{"k": "8"}}
	tf := media.Featurizer{Name: "text-hash", Version: "1"}
	sha := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		f media.Featurizer
		e Featurized
	}{{pf, photo}, {tf, doc}} {
		if _, ok, err := GetMedia(ctx, c, tc.f, sha); ok || err != nil {
			t.Fatalf("%s before Put: %v %v", tc.f, ok, err)
		}
		if err := PutMedia(ctx, c, tc.f, sha, tc.e); err != nil {
			t.Fatal(err)
		}
		got, ok, err := GetMedia(ctx, c, tc.f, sha)
		if !ok || err != nil || !reflect.DeepEqual(got, tc.e) {
			t.Fatalf("%s: %+v %v %v, want %+v", tc.f, got, ok, err, tc.e)
		}
		for i, row := range got.Instances {
			for j, x := range row {
				if math.Float64bits(x) != math.Float64bits(tc.e.Instances[i][j]) {
					t.Fatalf("feature %d,%d: %v, stored %v", i, j, x, tc.e.Instances[i][j])
				}
			}
		}
	}
	other := pf
	other.Params = map[string]string{"k": "9"}
	if _, ok, _ := GetMedia(ctx, c, other, sha); ok {
		t.Error("a featurizer of other parameters hits")
	}
	if _, ok, _ := GetMedia(ctx, c, pf, strings.Repeat("cd", 32)); ok {
		t.Error("another hash hits")
	}
	if err := c.PutRaw(ctx, MediaKey(pf, sha), []byte("{")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := GetMedia(ctx, c, pf, sha); ok || err == nil {
		t.Errorf("corrupt entry: %v %v, want an error", ok, err)
	}
}

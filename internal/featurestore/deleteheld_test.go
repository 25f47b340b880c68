package featurestore

import (
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

// TestDeleteHeld: the aliases a deleted version held are those of the
// transaction that deleted it (previous, candidate), for the operator's
// "deleted vN (was ...)" — not a read made before, which a promotion in
// between makes stale.
func TestDeleteHeld(t *testing.T) { redistest.ForEachBackend(t, testDeleteHeld) }

func testDeleteHeld(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	var vs []string
	for j := range 4 {
		m, err := r.Put(ctx, blobOf(t, "k", 1, abc, fmt.Sprint(j)), VersionMeta{})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, m.Version)
	}
	for _, v := range vs[:2] {
		if err := r.Promote(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.SetCandidate(ctx, vs[2]); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v    string
		want []string
	}{{vs[3], nil}, {vs[0], []string{AliasPrevious}}, {vs[2], []string{AliasCandidate}}} {
		held, err := r.DeleteHeld(ctx, c.v, true)
		if err != nil || !slices.Equal(held, c.want) {
			t.Errorf("delete %s: held %q, %v; want %q", c.v, held, err, c.want)
		}
	}
}

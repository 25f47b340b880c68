package featurestore

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

// TestPruneDeepHistory: Prune must protect every version in the rollback
// history, not only the newest two (LRange over 0..1 instead of 0..-1, or a
// set built from the "previous" alias alone, would delete versions that a
// third rollback then finds gone). Hand-computed: versions v1..v6, v1..v5
// promoted in order, so current v5, history v4 v3 v2 v1; keep 0 removes v6
// alone, and four rollbacks then walk back to v1.
func TestPruneDeepHistory(t *testing.T) { redistest.ForEachBackend(t, testPruneDeepHistory) }

func testPruneDeepHistory(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	var vs []string
	for j := range 6 {
		m, err := r.Put(ctx, blobOf(t, "k", 1, abc, fmt.Sprint(j)), VersionMeta{})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, m.Version)
	}
	for _, v := range vs[:5] {
		if err := r.Promote(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := r.Prune(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, vs[5:]) {
		t.Fatalf("Prune(0) removed %v, want %v", removed, vs[5:])
	}
	for i := 3; i >= 0; i-- {
		got, err := r.Rollback(ctx)
		if err != nil || got != vs[i] {
			t.Fatalf("rollback to %s: got %q, %v", vs[i], got, err)
		}
	}
	if _, err := r.Rollback(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rollback past the oldest version: err = %v, want ErrNotFound", err)
	}
}

// TestHistoryCap: the rollback history keeps the maxHistory (64) most
// recent former current versions, no more and no fewer. A wrong trim bound
// (maxHistory instead of maxHistory-1, or a changed constant) keeps 65 or
// 63; an unbounded list grows forever. Hand-computed: 70 versions promoted
// in order leave current v70 and a history v69..v6 (64 entries), so
// Prune(0) deletes exactly v1..v5, and 64 rollbacks reach v6 and a 65th
// finds none.
func TestHistoryCap(t *testing.T) { redistest.ForEachBackend(t, testHistoryCap) }

func testHistoryCap(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	const n = maxHistory + 6
	if maxHistory != 64 {
		t.Fatalf("maxHistory = %d, the documented bound is 64", maxHistory)
	}
	var vs []string
	for j := range n {
		m, err := r.Put(ctx, blobOf(t, "k", 1, abc, fmt.Sprint(j)), VersionMeta{})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, m.Version)
		if err := r.Promote(ctx, m.Version); err != nil {
			t.Fatal(err)
		}
	}
	if h, err := rdb.LLen(ctx, r.historyKey()).Result(); err != nil || h != maxHistory {
		t.Fatalf("history length %d (%v), want %d", h, err, maxHistory)
	}
	removed, err := r.Prune(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := vs[:n-1-maxHistory]; !slices.Equal(removed, want) {
		t.Fatalf("Prune(0) removed %v, want %v", removed, want)
	}
	for i := n - 2; i >= n-1-maxHistory; i-- {
		got, err := r.Rollback(ctx)
		if err != nil || got != vs[i] {
			t.Fatalf("rollback to %s: got %q, %v", vs[i], got, err)
		}
	}
	if _, err := r.Rollback(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rollback past the history cap: err = %v, want ErrNotFound", err)
	}
}

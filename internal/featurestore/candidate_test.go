package featurestore

import (
	"errors"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

func TestCandidate(t *testing.T) { redistest.ForEachBackend(t, testCandidate) }

// testCandidate catches a candidate alias that survives its promotion, a
// verdict on an old candidate clearing a newer one, two judges both
// promoting, and Prune deleting the version annotators run in shadow.
func testCandidate(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	var vs []string
	for i := range 4 {
		m, err := r.Put(ctx, blobOf(t, "orlr", 3, abc, string(rune('a'+i))), VersionMeta{})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, m.Version)
	}
	if err := r.Promote(ctx, vs[0]); err != nil {
		t.Fatal(err)
	}
	if err := r.SetCandidate(ctx, vs[0]); err == nil {
		t.Error("SetCandidate of the current version succeeded")
	}
	if err := r.SetCandidate(ctx, "v999"); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetCandidate of a missing version: %v, want ErrNotFound", err)
	}
	if err := r.SetCandidate(ctx, vs[1]); err != nil {
		t.Fatal(err)
	}
	// Prune keeping none deletes neither current nor the candidate.
	pruned, err := r.Prune(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(pruned, vs[1]) || slices.Contains(pruned, vs[0]) {
		t.Errorf("Prune deleted %v, which holds current %s or candidate %s", pruned, vs[0], vs[1])
	}
	if err := r.ClearCandidate(ctx, vs[2]); !errors.Is(err, ErrNotCandidate) {
		t.Errorf("ClearCandidate of a version that is not the candidate: %v", err)
	}
	if a, err := r.Alias(ctx, AliasCandidate); err != nil || a != vs[1] {
		t.Fatalf("candidate = %q, %v; want %s", a, err, vs[1])
	}
	if err := r.PromoteCandidate(ctx, vs[1]); err != nil {
		t.Fatal(err)
	}
	if err := r.PromoteCandidate(ctx, vs[1]); !errors.Is(err, ErrNotCandidate) {
		t.Errorf("a second judge's PromoteCandidate: %v, want ErrNotCandidate", err)
	}
	if _, err := r.Alias(ctx, AliasCandidate); !errors.Is(err, ErrNotFound) {
		t.Errorf("after promotion the candidate alias is still set: %v", err)
	}
	if c, _ := r.Alias(ctx, AliasCurrent); c != vs[1] {
		t.Errorf("current = %s, want %s", c, vs[1])
	}
	if p, _ := r.Alias(ctx, AliasPrevious); p != vs[0] {
		t.Errorf("previous = %s, want %s", p, vs[0])
	}
}

func TestDelete(t *testing.T) { redistest.ForEachBackend(t, testDelete) }

// testDelete catches deleting the served version, deleting what an alias or
// the history names without force, and a forced delete leaving "previous"
// or the history pointing at a deleted version (a rollback onto nothing).
func testDelete(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	var vs []string
	for i := range 5 {
		m, err := r.Put(ctx, blobOf(t, "orlr", 3, abc, string(rune('a'+i))), VersionMeta{})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, m.Version)
	}
	// History: v1, then v2 current -> previous v1; v3 current -> previous v2, history [v2 v1].
	for _, v := range vs[:3] {
		if err := r.Promote(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.SetCandidate(ctx, vs[3]); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v       string
		force   bool
		wantErr error
	}{
		{vs[2], false, ErrInUse}, // current
		{vs[2], true, ErrInUse},  // current, even forced
		{vs[1], false, ErrInUse}, // previous
		{vs[0], false, ErrInUse}, // history
		{vs[3], false, ErrInUse}, // candidate
		{"v999", false, ErrNotFound},
		{"x1", false, ErrNotFound},
	} {
		if err := r.Delete(ctx, tc.v, tc.force); !errors.Is(err, tc.wantErr) {
			t.Errorf("Delete(%s, force=%v) = %v, want %v", tc.v, tc.force, err, tc.wantErr)
		}
	}
	if err := r.Delete(ctx, vs[4], false); err != nil {
		t.Errorf("Delete of an unreferenced version: %v", err)
	}
	if _, _, err := r.Get(ctx, vs[4]); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted version still readable: %v", err)
	}
	// Forced: previous moves to the next history entry, candidate goes.
	if err := r.Delete(ctx, vs[1], true); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, vs[3], true); err != nil {
		t.Fatal(err)
	}
	if p, err := r.Alias(ctx, AliasPrevious); err != nil || p != vs[0] {
		t.Errorf("after deleting previous %s, previous = %q, %v; want %s", vs[1], p, err, vs[0])
	}
	if _, err := r.Alias(ctx, AliasCandidate); !errors.Is(err, ErrNotFound) {
		t.Errorf("after deleting the candidate the alias remains: %v", err)
	}
	if v, err := r.Rollback(ctx); err != nil || v != vs[0] {
		t.Errorf("rollback after the forced delete = %q, %v; want %s", v, err, vs[0])
	}
	list, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, m := range list {
		left = append(left, m.Version)
	}
	if want := []string{vs[0], vs[2]}; !slices.Equal(left, want) {
		t.Errorf("List after deletes = %v, want %v", left, want)
	}
}

package featurestore

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

func TestPromoteGuard(t *testing.T) { redistest.ForEachBackend(t, testPromoteGuard) }

// testPromoteGuard: every promotion goes through the contract guard, so a
// version of another input dimension or class list never replaces current
// by accident, whoever promotes it (an operator, `retrainer fit --promote`,
// a refit, a judged candidate); Force is the only way past, and a
// candidate, which annotators can only score beside a compatible current,
// is refused even then.
func testPromoteGuard(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	put := func(dim int, classes []string, state string) string {
		t.Helper()
		return must(r.Put(ctx, blobOf(t, "k", dim, classes, state), VersionMeta{}))(t).Version
	}
	cur := put(48, abc, "live")
	if err := r.Promote(ctx, cur); err != nil {
		t.Fatal(err)
	}
	wide := put(166, abc, "musk")
	renamed := put(48, []string{"a", "c", "b"}, "reordered")
	same := put(48, abc, "refit")
	for _, v := range []string{wide, renamed} {
		err := r.Promote(ctx, v)
		got := must(r.Alias(ctx, AliasCurrent))(t)
		t.Logf("Promote(%s) over 48-dim %s: err=%v; current now %s", v, cur, err, got)
		if !errors.Is(err, ErrIncompatible) || got != cur {
			t.Errorf("Promote(%s) = %v, current %s; want ErrIncompatible and current still %s", v, err, got, cur)
		}
		if err := r.SetCandidate(ctx, v); !errors.Is(err, ErrIncompatible) {
			t.Errorf("SetCandidate(%s) = %v, want ErrIncompatible", v, err)
		}
	}
	if err := r.Promote(ctx, same); err != nil {
		t.Fatalf("compatible Promote(%s): %v", same, err)
	}
	if err := r.Promote(ctx, wide, Force()); err != nil {
		t.Fatalf("forced Promote(%s): %v", wide, err)
	}
	if got := must(r.Alias(ctx, AliasCurrent))(t); got != wide {
		t.Fatalf("current %s after a forced promotion of %s", got, wide)
	}
	// Back to a 48-dimension version: incompatible with the 166-dimension
	// current, so it needs Force too (a rollback does not: it restores a
	// version that was current).
	if err := r.Promote(ctx, same); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Promote(%s) over %s = %v, want ErrIncompatible", same, wide, err)
	}
	if back, err := r.Rollback(ctx); err != nil || back != same {
		t.Fatalf("Rollback = %s, %v; want %s", back, err, same)
	}
}

func TestPromoteIfCurrent(t *testing.T) { redistest.ForEachBackend(t, testPromoteIfCurrent) }

// testPromoteIfCurrent: a promotion conditioned on the version its
// candidate was evaluated against happens only while that version is still
// current, so an operator's rollback or promotion in between is never
// undone by a refit that started before it.
func testPromoteIfCurrent(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	v := make([]string, 5)
	for i := range v {
		v[i] = must(r.Put(ctx, blobOf(t, "k", 2, abc, string(rune('a'+i))), VersionMeta{}))(t).Version
	}
	// Nothing current: IfCurrent("") is the condition "nothing current".
	if err := r.Promote(ctx, v[0], IfCurrent("x")); !errors.Is(err, ErrCurrentChanged) {
		t.Errorf("Promote(IfCurrent(x)) with nothing current = %v, want ErrCurrentChanged", err)
	}
	if err := r.Promote(ctx, v[0], IfCurrent("")); err != nil {
		t.Fatal(err)
	}
	if err := r.Promote(ctx, v[1], IfCurrent("")); !errors.Is(err, ErrCurrentChanged) {
		t.Errorf("Promote(IfCurrent(\"\")) with %s current = %v, want ErrCurrentChanged", v[0], err)
	}
	if err := r.Promote(ctx, v[1], IfCurrent(v[0])); err != nil {
		t.Fatal(err)
	}
	// A refit evaluated against v[1]; the operator rolls back to v[0]
	// before it finishes; its promotion is refused.
	if _, err := r.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	err := r.Promote(ctx, v[2], IfCurrent(v[1]))
	got := must(r.Alias(ctx, AliasCurrent))(t)
	if !errors.Is(err, ErrCurrentChanged) || got != v[0] {
		t.Errorf("Promote(%s, IfCurrent(%s)) after a rollback to %s = %v, current %s; want ErrCurrentChanged, current %s", v[2], v[1], v[0], err, got, v[0])
	}
	// The candidate path is conditioned the same way.
	if err := r.SetCandidate(ctx, v[3]); err != nil {
		t.Fatal(err)
	}
	if err := r.PromoteCandidate(ctx, v[3], IfCurrent(v[1])); !errors.Is(err, ErrCurrentChanged) {
		t.Errorf("PromoteCandidate(IfCurrent(%s)) with %s current = %v, want ErrCurrentChanged", v[1], v[0], err)
	}
	if c := must(r.Alias(ctx, AliasCandidate))(t); c != v[3] {
		t.Errorf("candidate %s after a refused promotion, want it kept (%s)", c, v[3])
	}
	if err := r.PromoteCandidate(ctx, v[3], IfCurrent(v[0])); err != nil {
		t.Fatal(err)
	}
}

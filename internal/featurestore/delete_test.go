package featurestore

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

func TestDeleteEdges(t *testing.T) { redistest.ForEachBackend(t, testDeleteEdges) }

// testDeleteEdges pins the parts of Delete that TestDelete's short history
// does not reach. Faults it catches: reading only the newest entries of
// the rollback history (a version deep in it deleted without force, a
// rollback onto nothing later); clearing the candidate alias when another
// version is deleted; and a forced delete of the only history entry
// failing (or pointing "previous" at nothing) instead of removing the
// alias.
func testDeleteEdges(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	var vs []string
	for i := range 6 {
		m, err := r.Put(ctx, blobOf(t, "orlr", 3, abc, fmt.Sprint("edge", i)), VersionMeta{})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, m.Version)
	}
	// Four promotions: current vs[3], history [vs[2] vs[1] vs[0]].
	for _, v := range vs[:4] {
		if err := r.Promote(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.SetCandidate(ctx, vs[4]); err != nil {
		t.Fatal(err)
	}
	// The oldest history entry is in use too.
	if err := r.Delete(ctx, vs[0], false); !errors.Is(err, ErrInUse) {
		t.Errorf("Delete of the third history entry without force = %v, want %v", err, ErrInUse)
	}
	// Deleting another version leaves the candidate alone.
	if err := r.Delete(ctx, vs[5], false); err != nil {
		t.Fatalf("Delete of an unreferenced version: %v", err)
	}
	if c, err := r.Alias(ctx, AliasCandidate); err != nil || c != vs[4] {
		t.Errorf("after deleting %s the candidate is %q, %v; want %s", vs[5], c, err, vs[4])
	}

	// A registry whose history holds one entry: current b, previous a.
	r2 := NewRegistry(rdb, prefix+"-one")
	var two []string
	for i := range 2 {
		m, err := r2.Put(ctx, blobOf(t, "orlr", 3, abc, fmt.Sprint("one", i)), VersionMeta{})
		if err != nil {
			t.Fatal(err)
		}
		two = append(two, m.Version)
		if err := r2.Promote(ctx, m.Version); err != nil {
			t.Fatal(err)
		}
	}
	if err := r2.Delete(ctx, two[0], true); err != nil {
		t.Fatalf("forced delete of the only history entry: %v", err)
	}
	if p, err := r2.Alias(ctx, AliasPrevious); !errors.Is(err, ErrNotFound) {
		t.Errorf("after deleting the only history entry previous = %q, %v; want none", p, err)
	}
	if v, err := r2.Rollback(ctx); err == nil {
		t.Errorf("rollback with an empty history went to %s", v)
	}
	if c, err := r2.Alias(ctx, AliasCurrent); err != nil || c != two[1] {
		t.Errorf("current = %q, %v; want %s", c, err, two[1])
	}
}

// TestPutTakesImplicitClassesFromTheEnvelope catches Put leaving the
// implicit classes out of a version's metadata when the caller gives none
// (the metadata would then disagree with its own envelope and the version
// be refused as corrupt, or an annotator score a model with an appended
// "unknown" class over the wrong vocabulary).
func TestPutTakesImplicitClassesFromTheEnvelope(t *testing.T) {
	redistest.ForEachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := testCtx(t)
		r := NewRegistry(rdb, prefix)
		classes := append(append([]string(nil), abc...), "unknown")
		b, err := models.Encode(fixtureModel{meta: models.Meta{Kind: "orlr", Dim: 3, Classes: classes, ImplicitClasses: []string{"unknown"}}, state: "implicit"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := r.Put(ctx, b, VersionMeta{})
		if err != nil {
			t.Fatalf("Put of a model with an implicit class: %v", err)
		}
		if !slices.Equal(m.ImplicitClasses, []string{"unknown"}) {
			t.Errorf("Put metadata implicit classes = %q, want [unknown]", m.ImplicitClasses)
		}
		if _, got, err := r.Get(ctx, m.Version); err != nil || !slices.Equal(got.ImplicitClasses, []string{"unknown"}) {
			t.Errorf("Get = %q, %v; want implicit classes [unknown]", got.ImplicitClasses, err)
		}
	})
}

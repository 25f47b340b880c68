package featurestore

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/signing"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

func TestSigning(t *testing.T) { redistest.ForEachBackend(t, testSigning) }

// testSigning: a signing registry signs what it stores; a verifying one
// refuses, on every read, versions that are unsigned, re-signed by another
// key, or altered after signing even when the checksum and size were
// recomputed to match, and the refusals wrap both ErrCorrupt and the
// signing error.
func testSigning(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherPub, otherPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer := NewRegistry(rdb, prefix, WithSigningKey(priv))
	reader := NewRegistry(rdb, prefix, WithVerifyKey(pub))
	plain := NewRegistry(rdb, prefix)
	if !signer.Verifies() || !reader.Verifies() || plain.Verifies() {
		t.Fatal("Verifies: signer and reader should verify, plain should not")
	}

	blob := blobOf(t, "k", 2, abc, "good")
	good := must(signer.Put(ctx, blob, VersionMeta{}))(t)
	sig, err := base64.StdEncoding.DecodeString(good.Signature)
	if err != nil || signing.Verify(pub, blob, sig) != nil {
		t.Fatalf("stored signature %q does not verify: %v", good.Signature, err)
	}
	for name, r := range map[string]*Registry{"reader": reader, "signer": signer, "plain": plain} {
		if b, m, err := r.Get(ctx, good.Version); err != nil || !slices.Equal(b, blob) || m.Signature != good.Signature {
			t.Errorf("%s: Get(signed) = %v", name, err)
		}
	}
	if err := reader.Promote(ctx, good.Version); err != nil {
		t.Fatal(err)
	}
	if _, m, err := reader.Current(ctx); err != nil || m.Version != good.Version {
		t.Fatalf("Current = %s, %v", m.Version, err)
	}

	unsigned := must(plain.Put(ctx, blobOf(t, "k", 2, abc, "unsigned"), VersionMeta{}))(t)
	if unsigned.Signature != "" {
		t.Fatalf("plain registry signed: %q", unsigned.Signature)
	}
	foreign := must(NewRegistry(rdb, prefix, WithSigningKey(otherPriv)).Put(ctx, blobOf(t, "k", 2, abc, "foreign"), VersionMeta{}))(t)
	tampered := must(signer.Put(ctx, blobOf(t, "k", 2, abc, "to be tampered"), VersionMeta{}))(t)
	// The tampering attack: another valid model in place of the blob,
	// with the checksum and size recomputed. The checksum cannot tell.
	evil := blobOf(t, "k", 2, abc, "zeroed weights")
	must(rdb.Set(ctx, signer.blobKey(tampered.Version), evil, 0).Result())(t)
	editMeta(ctx, t, rdb, signer, tampered.Version, func(m *VersionMeta) {
		m.Checksum, m.Size = checksumOf(evil), len(evil)
	})
	if _, _, err := plain.Get(ctx, tampered.Version); err != nil {
		t.Fatalf("the rechecksummed blob should pass the checksum: %v", err)
	}
	garbled := must(signer.Put(ctx, blobOf(t, "k", 2, abc, "garbled"), VersionMeta{}))(t)
	editMeta(ctx, t, rdb, signer, garbled.Version, func(m *VersionMeta) { m.Signature = "not base64!" })
	truncated := must(signer.Put(ctx, blobOf(t, "k", 2, abc, "truncated"), VersionMeta{}))(t)
	editMeta(ctx, t, rdb, signer, truncated.Version, func(m *VersionMeta) { m.Signature = m.Signature[:20] })

	refused := []struct {
		version string
		want    error
	}{
		{unsigned.Version, ErrUnsigned},
		{foreign.Version, ErrBadSignature},
		{tampered.Version, ErrBadSignature},
		{garbled.Version, ErrBadSignature},
		{truncated.Version, ErrBadSignature},
	}
	for _, tc := range refused {
		for name, r := range map[string]*Registry{"reader": reader, "signer": signer} {
			b, _, err := r.Get(ctx, tc.version)
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrCorrupt) || b != nil {
				t.Errorf("%s: Get(%s) = %d bytes, %v; want nil, %v and ErrCorrupt", name, tc.version, len(b), err, tc.want)
			}
		}
		if err := reader.Promote(ctx, tc.version); !errors.Is(err, tc.want) {
			t.Errorf("Promote(%s) = %v, want %v", tc.version, err, tc.want)
		}
	}
	if cur := must(reader.Alias(ctx, AliasCurrent))(t); cur != good.Version {
		t.Fatalf("current = %s after refused promotions, want %s", cur, good.Version)
	}

	// Current on a version made current behind the verifier's back (by a
	// registry that does not verify) is refused; a rollback to a refused
	// version changes nothing; a rollback to a good one is allowed.
	if err := plain.Promote(ctx, tampered.Version); err != nil {
		t.Fatal(err)
	}
	if b, _, err := reader.Current(ctx); !errors.Is(err, ErrBadSignature) || b != nil {
		t.Errorf("Current on a tampered version = %d bytes, %v; want ErrBadSignature", len(b), err)
	}
	if got, err := reader.Rollback(ctx); err != nil || got != good.Version {
		t.Fatalf("Rollback = %s, %v; want %s", got, err, good.Version)
	}
	if err := plain.Promote(ctx, unsigned.Version); err != nil {
		t.Fatal(err)
	}
	if err := plain.Promote(ctx, good.Version); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Rollback(ctx); !errors.Is(err, ErrUnsigned) {
		t.Errorf("Rollback to an unsigned version = %v, want ErrUnsigned", err)
	}
	if cur := must(reader.Alias(ctx, AliasCurrent))(t); cur != good.Version {
		t.Errorf("current = %s after a refused rollback, want %s", cur, good.Version)
	}

	// A verifying registry refuses to store what it would refuse to read,
	// and accepts a blob signed elsewhere with the right key.
	if _, err := reader.Put(ctx, blobOf(t, "k", 2, abc, "x"), VersionMeta{}); !errors.Is(err, ErrUnsigned) {
		t.Errorf("verifying Put of an unsigned blob = %v, want ErrUnsigned", err)
	}
	other := blobOf(t, "k", 2, abc, "signed offline")
	if _, err := reader.Put(ctx, other, VersionMeta{Signature: base64.StdEncoding.EncodeToString(signing.Sign(otherPriv, other))}); !errors.Is(err, ErrBadSignature) {
		t.Errorf("verifying Put with another key's signature = %v, want ErrBadSignature", err)
	}
	offline := must(reader.Put(ctx, other, VersionMeta{Signature: base64.StdEncoding.EncodeToString(signing.Sign(priv, other))}))(t)
	if _, _, err := reader.Get(ctx, offline.Version); err != nil {
		t.Errorf("Get of a blob signed offline: %v", err)
	}
	// A signer replaces a signature it is given.
	resigned := must(signer.Put(ctx, other, VersionMeta{Signature: "bogus"}))(t)
	if _, _, err := reader.Get(ctx, resigned.Version); err != nil {
		t.Errorf("signer kept a bogus signature: %v", err)
	}
	// The other key verifies only its own blob.
	if _, _, err := NewRegistry(rdb, prefix, WithVerifyKey(otherPub)).Get(ctx, foreign.Version); err != nil {
		t.Errorf("foreign blob under its own key: %v", err)
	}
}

func checksumOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestIDsSurviveReset(t *testing.T) { redistest.ForEachBackend(t, testIDsSurviveReset) }

// testIDsSurviveReset: after Redis loses the registry's data, version
// numbers start again at v1 but IDs never repeat, so an ID names one model
// forever.
func testIDsSurviveReset(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	seen := map[string]string{}
	for round := range 3 {
		var versions []string
		for i := range 4 {
			m := must(r.Put(ctx, blobOf(t, "k", 1, abc, fmt.Sprint(round, i)), VersionMeta{}))(t)
			if len(m.ID) != 26 {
				t.Fatalf("ID %q is not a ULID", m.ID)
			}
			if prev, dup := seen[m.ID]; dup {
				t.Fatalf("round %d: ID %s of %s repeats that of %s", round, m.ID, m.Version, prev)
			}
			seen[m.ID] = fmt.Sprint(round, "/", m.Version)
			versions = append(versions, m.Version)
			if _, got, err := r.Get(ctx, m.Version); err != nil || got.ID != m.ID {
				t.Fatalf("stored ID %q, Put returned %q: %v", got.ID, m.ID, err)
			}
		}
		if err := r.Promote(ctx, versions[len(versions)-1]); err != nil {
			t.Fatal(err)
		}
		// The display numbers restart after the loss: that is what the
		// IDs are for.
		if !slices.Equal(versions, []string{"v1", "v2", "v3", "v4"}) {
			t.Errorf("round %d: versions %v, want v1..v4 after a reset", round, versions)
		}
		flushRegistry(ctx, t, rdb, r)
		if _, err := r.Alias(ctx, AliasCurrent); !errors.Is(err, ErrNotFound) {
			t.Fatalf("registry not flushed: %v", err)
		}
	}
}

// flushRegistry deletes every key of r, as a Redis that lost its data (or
// an operator's FLUSHALL) would. All its keys share one hash tag, so on a
// cluster they are on one node.
func flushRegistry(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry) {
	t.Helper()
	node := redis.UniversalClient(rdb)
	if c, ok := rdb.(*redis.ClusterClient); ok {
		n, err := c.MasterForKey(ctx, r.seqKey())
		if err != nil {
			t.Fatal(err)
		}
		node = n
	}
	keys := must(node.Keys(ctx, r.base+"*").Result())(t)
	if len(keys) == 0 {
		t.Fatal("no registry keys to flush")
	}
	must(rdb.Del(ctx, keys...).Result())(t)
}

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/signing"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// writeKeys writes a fresh Ed25519 key pair and returns the paths of the
// private and the public key.
func writeKeys(t *testing.T) (priv, pub string) {
	t.Helper()
	privPEM, pubPEM, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	priv, pub = filepath.Join(dir, "signing-key.pem"), filepath.Join(dir, "verify-key.pem")
	if err := os.WriteFile(priv, privPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, pubPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// zeroWeights returns blob with every weight of its ORed-LR model set to
// zero: still a valid model of the same kind, classes and dimension, that
// annotates everything alike.
func zeroWeights(t *testing.T, blob []byte) []byte {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(blob, &env); err != nil {
		t.Fatal(err)
	}
	sm := env["state"].(map[string]any)["softmax"].(map[string]any)
	w := sm["w"].([]any)
	for i := range w {
		w[i] = 0
	}
	out, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(out, blob) {
		t.Fatal("tampering changed nothing")
	}
	return out
}

// TestTamperedModelRefused is the tampering attack against an annotator
// run with --verify-key: someone with write access to Redis replaces the
// blob of a validly signed version with one whose weights are zeroed,
// recomputes its checksum and size so the registry's integrity check
// passes, and makes it current. The annotator refuses it, says so at
// ERROR, and keeps annotating with the model it holds.
func TestTamperedModelRefused(t *testing.T) {
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	privFile, pubFile := writeKeys(t)
	priv, err := signing.LoadPrivateKey(privFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signer := featurestore.NewRegistry(e.rdb, e.prefix+":models", featurestore.WithSigningKey(priv))
	good, err := signer.Put(ctx, blob, featurestore.VersionMeta{TrainingWindow: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	if err := signer.Promote(ctx, good.Version); err != nil {
		t.Fatal(err)
	}
	out := e.tail(ctx)
	a := e.startAnnotator("verifier", annotatorOpts{extra: []string{"--verify-key", pubFile}})
	pub := e.publisher(0)
	half := len(ds.Bags) / 2
	if _, err := pub.PublishDataset(ctx, ds, ds.Bags[:half]); err != nil {
		t.Fatal(err)
	}
	out.waitIDs(t, half, 60*time.Second)

	// The attack. A second version, validly signed, then its blob swapped
	// in Redis with checksum and size recomputed.
	target, err := signer.Put(ctx, blob, featurestore.VersionMeta{TrainingWindow: "e2e, to be tampered"})
	if err != nil {
		t.Fatal(err)
	}
	evil := zeroWeights(t, blob)
	base := "{" + e.prefix + ":models}"
	if err := e.rdb.Set(ctx, base+":blob:"+target.Version, evil, 0).Err(); err != nil {
		t.Fatal(err)
	}
	raw, err := e.rdb.Get(ctx, base+":meta:"+target.Version).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	meta["checksum"], meta["size"] = sha256Hex(evil), len(evil)
	raw, _ = json.Marshal(meta)
	if err := e.rdb.Set(ctx, base+":meta:"+target.Version, raw, 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The checksum cannot tell: a registry without the key serves it.
	if b, _, err := e.reg.Get(ctx, target.Version); err != nil || !bytes.Equal(b, evil) {
		t.Fatalf("the rechecksummed blob should pass the integrity check: %v", err)
	}
	// Made current, with the notification, as an attacker's client would.
	if err := e.reg.Promote(ctx, target.Version); err != nil {
		t.Fatal(err)
	}

	streamtest.WaitFor(t, 20*time.Second, "the annotator logs the refusal at ERROR", func() bool {
		for line := range strings.Lines(a.logText()) {
			if strings.Contains(line, "level=ERROR") && strings.Contains(line, "signature does not verify") && strings.Contains(line, target.Version) {
				return true
			}
		}
		return false
	})
	if _, err := pub.PublishDataset(ctx, ds, ds.Bags[half:]); err != nil {
		t.Fatal(err)
	}
	out.waitIDs(t, len(ds.Bags), 60*time.Second)
	out.mu.Lock()
	defer out.mu.Unlock()
	for id, anns := range out.anns {
		for _, ann := range anns {
			if ann.ModelVersion != good.Version {
				t.Fatalf("bag %s annotated by %s, want the signed %s", id, ann.ModelVersion, good.Version)
			}
		}
	}
	select {
	case <-a.done:
		t.Fatalf("the annotator exited: %v", a.err)
	default:
	}
	t.Logf("tampered %s refused; %d bags annotated by %s, before and after", target.Version, len(out.anns), good.Version)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

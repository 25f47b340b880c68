package main

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

	"github.com/mimlstream/mimlstream/internal/models/catalog"
	"github.com/mimlstream/mimlstream/internal/signing"
	"github.com/mimlstream/mimlstream/internal/stream/retrain"
	"github.com/mimlstream/mimlstream/internal/stream/service"
)

// TestModelsVerifyKey: with --verify-key, mimlctl refuses what annotators
// run with the same key refuse: a tampered export whose checksum and size
// were recomputed (so only its signature gives it away) is not imported,
// shown as verified or promoted, and --force does not pass a bad
// signature. Without the key, show says that signatures were not checked.
func TestModelsVerifyKey(t *testing.T) {
	r := newRegistryEnv(t)
	ctx := context.Background()
	dir := t.TempDir()
	privPEM, pubPEM, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, pub := filepath.Join(dir, "priv.pem"), filepath.Join(dir, "pub.pem")
	for f, b := range map[string][]byte{priv: privPEM, pub: pubPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	fitArgs := append([]string{"--data", "../../testdata/mscv2/MSCV2.mat", "--model", "dummy", "--promote", "--signing-key", priv}, r.flags...)
	if err := retrain.FitCommand(ctx, service.Env{Stdout: &out, Stderr: &errb}, catalog.New(), fitArgs); err != nil {
		t.Fatalf("retrainer fit: %v\n%s", err, errb.String())
	}
	signed := r.current(t)
	models := func(args ...string) (int, string, string) {
		return runCmd(ctx, append(append([]string{"models"}, args...), r.flags...)...)
	}
	file := filepath.Join(dir, "signed.json")
	if code, _, stderr := models("export", signed, "--out", file); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	tampered := tamperSigned(t, file)

	code, _, stderr := models("import", tampered, "--verify-key", pub)
	t.Logf("import of a tampered export (checksum recomputed) with --verify-key: exit %d: %s", code, strings.TrimSpace(stderr))
	if code != 1 || !strings.Contains(stderr, "signature") {
		t.Errorf("import --verify-key of a tampered export: exit %d, want 1 naming the signature:\n%s", code, stderr)
	}
	// Imported by someone without the key, it is stored...
	code, stdout, stderr := models("import", tampered, "--json")
	var imp struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal([]byte(stdout), &imp); code != 0 || err != nil {
		t.Fatalf("import without a key: exit %d, %v: %s", code, err, stderr)
	}
	// ... but never shown as verified nor promoted by anyone with it.
	if code, stdout, _ := models("show", imp.Version); code != 0 || !strings.Contains(stdout, "signature        not checked") {
		t.Errorf("show without a key: exit %d, does not say the signature was not checked:\n%s", code, stdout)
	}
	if code, stdout, stderr := models("show", signed, "--verify-key", pub); code != 0 || !strings.Contains(stdout, "signature        verified") {
		t.Errorf("show --verify-key of the signed version: exit %d:\n%s%s", code, stdout, stderr)
	}
	for _, extra := range [][]string{nil, {"--force"}} {
		args := append([]string{"promote", imp.Version, "--verify-key", pub}, extra...)
		code, _, stderr := models(args...)
		t.Logf("models %s: exit %d, current %s", strings.Join(args, " "), code, r.current(t))
		if code != 1 || !strings.Contains(stderr, "signature") || r.current(t) != signed {
			t.Errorf("models %q: exit %d, current %s; want 1 naming the signature and %s current:\n%s", args, code, r.current(t), signed, stderr)
		}
	}
	if code, stdout, stderr := models("show", imp.Version, "--verify-key", pub); code != 1 || !strings.Contains(stderr, "signature") {
		t.Errorf("show --verify-key of the tampered version: exit %d, want 1:\n%s%s", code, stdout, stderr)
	}
	// The key's environment variable works as the flag does.
	t.Setenv("MIMLSTREAM_MIMLCTL_MODELS_VERIFY_KEY", pub)
	if code, _, _ := models("promote", imp.Version); code != 1 || r.current(t) != signed {
		t.Errorf("promote with the key from the environment: exit %d, current %s", code, r.current(t))
	}
}

// tamperSigned changes the model bytes of an export without changing what
// it decodes to (the envelope re-indented), and recomputes the checksum and
// size to match, keeping the signature: only the signature can tell.
func tamperSigned(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Format     string         `json:"format"`
		ExportedAt string         `json:"exported_at"`
		Meta       map[string]any `json:"meta"`
		Blob       []byte         `json:"blob"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Meta["signature"] == nil {
		t.Fatalf("export of a signed version has no signature: %s", b)
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, doc.Blob, "", " "); err != nil {
		t.Fatal(err)
	}
	doc.Blob = ind.Bytes()
	sum := sha256.Sum256(doc.Blob)
	doc.Meta["checksum"], doc.Meta["size"] = hex.EncodeToString(sum[:]), len(doc.Blob)
	out := filepath.Join(t.TempDir(), "tampered.json")
	if err := os.WriteFile(out, mustJSON(t, doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

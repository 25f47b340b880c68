package signing

import (
	"crypto/ed25519"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mimlstream/mimlstream/internal/testsupport/realpart"
)

func writeKeys(t *testing.T) (privPath, pubPath string) {
	t.Helper()
	priv, pub, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	privPath, pubPath = filepath.Join(dir, "model.key"), filepath.Join(dir, "model.pub")
	if err := os.WriteFile(privPath, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubPath, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	return privPath, pubPath
}

func TestSignVerify(t *testing.T) {
	privPath, pubPath := writeKeys(t)
	priv, err := LoadPrivateKey(privPath)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := LoadPublicKey(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	_, otherPub := writeKeys(t)
	other, err := LoadPublicKey(otherPub)
	if err != nil {
		t.Fatal(err)
	}
	blob := []byte(`{"kind":"orlr","weights":[0.5,-1.25]}`)
	sig := Sign(priv, blob)
	tampered := []byte(`{"kind":"orlr","weights":[0.0,-0.00]}`)
	cases := []struct {
		name string
		key  ed25519.PublicKey
		blob []byte
		sig  []byte
		want error
	}{
		{"good", pub, blob, sig, nil},
		{"tampered blob (weights zeroed)", pub, tampered, sig, ErrBadSignature},
		{"one byte appended", pub, append(append([]byte{}, blob...), ' '), sig, ErrBadSignature},
		{"unsigned", pub, blob, nil, ErrUnsigned},
		{"truncated signature", pub, blob, sig[:10], ErrBadSignature},
		{"other key", other, blob, sig, ErrBadSignature},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(tc.key, tc.blob, tc.sig); !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
	// A plain ed25519 signature of the blob (without the domain) must not
	// verify: signatures made for another purpose with the same key cannot
	// be replayed as model signatures.
	if err := Verify(pub, blob, ed25519.Sign(priv, blob)); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("undomained signature accepted: %v", err)
	}
}

func TestLoadKeyErrors(t *testing.T) {
	privPath, pubPath := writeKeys(t)
	if _, err := LoadPublicKey(privPath); err == nil {
		t.Error("private key file accepted as public key")
	}
	if _, err := LoadPrivateKey(pubPath); err == nil {
		t.Error("public key file accepted as private key")
	}
	if _, err := LoadPrivateKey(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing file accepted")
	}
}

// TestOpenSSLKeys: keys made by openssl, as docs/security.md tells operators,
// load and work together.
func TestOpenSSLKeys(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		realpart.Missing(t, "openssl is not installed (apt-get install openssl)")
	}
	dir := t.TempDir()
	priv, pub := filepath.Join(dir, "k.pem"), filepath.Join(dir, "k.pub")
	if out, err := exec.Command(openssl, "genpkey", "-algorithm", "ed25519", "-out", priv).CombinedOutput(); err != nil {
		t.Fatalf("openssl genpkey: %v\n%s", err, out)
	}
	if out, err := exec.Command(openssl, "pkey", "-in", priv, "-pubout", "-out", pub).CombinedOutput(); err != nil {
		t.Fatalf("openssl pkey: %v\n%s", err, out)
	}
	k, err := LoadPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := LoadPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(p, []byte("m"), Sign(k, []byte("m"))); err != nil {
		t.Fatal(err)
	}
}

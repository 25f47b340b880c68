// Package signing signs model blobs with Ed25519 and checks the signatures,
// so that an annotator serves only models made by a holder of the
// retrainer's private key. The registry's sha256 detects corruption; anyone
// who can write to Redis can recompute it, but not forge a signature.
//
// Keys are PEM files in the formats openssl writes
// (`openssl genpkey -algorithm ed25519` for the private key, PKCS#8;
// `openssl pkey -pubout` for the public key, PKIX), or made by GenerateKey.
package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// Errors returned by Verify.
var (
	ErrUnsigned     = errors.New("model blob is not signed")
	ErrBadSignature = errors.New("model blob signature does not verify with the configured public key")
)

// domain separates these signatures from any other use of the same key.
const domain = "mimlstream model blob v1\x00"

// message is what is signed: the domain and the blob's sha256. Signing the
// digest keeps the signature independent of how the blob is stored while
// binding every byte of it.
func message(blob []byte) []byte {
	sum := sha256.Sum256(blob)
	return append([]byte(domain), sum[:]...)
}

// Sign returns the signature of blob.
func Sign(key ed25519.PrivateKey, blob []byte) []byte {
	return ed25519.Sign(key, message(blob))
}

// Verify checks sig over blob.
func Verify(key ed25519.PublicKey, blob, sig []byte) error {
	if len(sig) == 0 {
		return ErrUnsigned
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(key, message(blob), sig) {
		return ErrBadSignature
	}
	return nil
}

// GenerateKey makes a key pair and returns both halves as PEM.
func GenerateKey() (privPEM, pubPEM []byte, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate ed25519 key: %w", err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("encode private key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, fmt.Errorf("encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), nil
}

// LoadPrivateKey reads a PKCS#8 PEM Ed25519 private key.
func LoadPrivateKey(path string) (ed25519.PrivateKey, error) {
	der, err := readPEM(path, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key %s: %T is not an Ed25519 key", path, k)
	}
	return priv, nil
}

// LoadPublicKey reads a PKIX PEM Ed25519 public key.
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	der, err := readPEM(path, "PUBLIC KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("verify key %s: %w", path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("verify key %s: %T is not an Ed25519 key", path, k)
	}
	return pub, nil
}

func readPEM(path, typ string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	for {
		var b *pem.Block
		b, raw = pem.Decode(raw)
		if b == nil {
			return nil, fmt.Errorf("key %s: no PEM block of type %q", path, typ)
		}
		if b.Type == typ {
			return b.Bytes, nil
		}
	}
}

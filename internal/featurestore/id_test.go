package featurestore

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// encodeULIDRef is the reference encoding: the 128-bit number in base 32
// by big-integer division, left-padded to 26 digits.
func encodeULIDRef(b [16]byte) string {
	n := new(big.Int).SetBytes(b[:])
	var digits []byte
	base := big.NewInt(32)
	m := new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, base, m)
		digits = append(digits, crockford[m.Int64()])
	}
	for len(digits) < 26 {
		digits = append(digits, '0')
	}
	for i, j := 0, len(digits)-1; i < j; i, j = i+1, j-1 {
		digits[i], digits[j] = digits[j], digits[i]
	}
	return string(digits)
}

func TestEncodeULIDMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := [][16]byte{{}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	for range 1000 {
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		cases = append(cases, b)
	}
	for _, b := range cases {
		if got, want := encodeULID(b), encodeULIDRef(b); got != want {
			t.Fatalf("encodeULID(%x) = %s, want %s", b, got, want)
		}
	}
	if got := encodeULID(cases[1]); got != "7ZZZZZZZZZZZZZZZZZZZZZZZZZ" {
		t.Errorf("max ULID = %s", got)
	}
}

// TestNewULID: the spec's example time 1469922850259 ms encodes as
// 01ARZ3NDEK, IDs sort by time, and they do not repeat.
func TestNewULID(t *testing.T) {
	id, err := newULID(time.UnixMilli(1469922850259))
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != 26 || !strings.HasPrefix(id, "01ARZ3NDEK") {
		t.Errorf("ULID at 1469922850259 ms = %s, want 01ARZ3NDEK + 16 random digits", id)
	}
	later, _ := newULID(time.UnixMilli(1469922850260))
	if later <= id {
		t.Errorf("later ULID %s sorts before %s", later, id)
	}
	seen := map[string]bool{}
	now := time.Now()
	for range 10000 {
		id, err := newULID(now) // same millisecond: only the random part differs
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("ULID %s repeated", id)
		}
		seen[id] = true
	}
}

package wire_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/schemaref"
)

// TestDeadLetterEncodeBounded checks every dead letter against its bound
// over originals from empty to far over the bound: the record fits and
// matches its schema; the original is kept whole exactly when the whole
// record fits (the reference: the unbounded encoding's length), and
// otherwise as a prefix of at most 4 KiB with the whole original's length
// and SHA-256.
func TestDeadLetterEncodeBounded(t *testing.T) {
	v := schemaref.MustNew(0)
	rng := rand.New(rand.NewPCG(1, 2))
	longErr := errors.New(strings.Repeat("é", 3000)) // multi-byte runes: cut as runes
	for _, size := range []int{0, 1, 100, 3000, 5000, 226_000, 1 << 20, 2<<20 + 7} {
		orig := make([]byte, size)
		for i := range orig {
			orig[i] = byte(rng.IntN(256))
		}
		for _, maxBytes := range []int{600, 1000, 5000, 10_000, 400_000, 1<<20 - 4096} {
			for _, cause := range []error{errors.New("bag \"x\" has dimension 3, model v1 expects 48"), longErr} {
				name := fmt.Sprintf("original %d, bound %d, error %d", size, maxBytes, len(cause.Error()))
				d := wire.NewDeadLetter(wire.StageAnnotate, wire.ReasonDimension, cause, "key-1", "bags", 3, 12345, orig)
				unbounded, _ := json.Marshal(d)
				raw := d.Encode(maxBytes)
				if len(raw) > maxBytes {
					t.Errorf("%s: %d bytes", name, len(raw))
				}
				if err := v.ValidateDeadLetter(raw); err != nil {
					t.Errorf("%s: schema: %v", name, err)
				}
				var got wire.DeadLetter
				if err := json.Unmarshal(raw, &got); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got.OriginalSize != size || got.Topic != "bags" || got.Partition != 3 || got.Offset != 12345 || got.Key != "key-1" {
					t.Errorf("%s: lost where the original is: %+v", name, got)
				}
				if !utf8.ValidString(got.Error) || !strings.HasPrefix(cause.Error(), got.Error) {
					t.Errorf("%s: error text %q is not a prefix of the cause", name, got.Error)
				}
				whole := len(unbounded) <= maxBytes
				switch {
				case whole && (!bytes.Equal(got.Original, orig) || got.OriginalSHA256 != "" || got.Error != cause.Error()):
					t.Errorf("%s: fits whole but was cut (%d of %d bytes kept)", name, len(got.Original), size)
				case !whole:
					sum := sha256.Sum256(orig)
					if got.OriginalSHA256 != hex.EncodeToString(sum[:]) {
						t.Errorf("%s: sha256 %q", name, got.OriginalSHA256)
					}
					if !bytes.HasPrefix(orig, got.Original) || len(got.Original) > wire.MaxDeadLetterOriginal {
						t.Errorf("%s: kept %d bytes, not a prefix of at most 4 KiB", name, len(got.Original))
					}
					// The prefix is as long as the bound allows: 3 more
					// bytes (4 base64 characters) would not fit.
					if len(got.Original) < min(size, wire.MaxDeadLetterOriginal) {
						got.Original = orig[:min(size, len(got.Original)+3)]
						if more, _ := json.Marshal(got); len(more) <= maxBytes {
							t.Errorf("%s: kept %d bytes where %d fit", name, len(got.Original)-3, len(got.Original))
						}
					}
				}
			}
		}
	}
}

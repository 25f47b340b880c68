package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mimlstream/mimlstream/schemas"
)

// maxDeadLetterOriginal caps the original bytes kept by a dead letter that
// cannot hold the whole original: a prefix to recognise it by; the original
// itself stays where its topic, partition and offset say.
const maxDeadLetterOriginal = 4096

// defaultDeadLetterBytes bounds a dead letter when the caller gives no
// bound: Kafka's default message size limit less room for the key and the
// headers.
const defaultDeadLetterBytes = 1<<20 - 8<<10

// NewDeadLetter returns the dead letter of a message rejected at stage
// (StageIngest, StageAnnotate, StageRetrain) for reason. key, topic,
// partition and offset locate the original when it came from a topic
// (offset -1 when it did not). Encode bounds its size.
func NewDeadLetter(stage string, reason Reason, err error, key, topic string, partition int, offset int64, original []byte) DeadLetter {
	if original == nil {
		original = []byte{}
	}
	return DeadLetter{SchemaVersion: schemas.Version, Reason: reason, Error: err.Error(), Stage: stage, Key: key, Topic: topic,
		Partition: partition, Offset: offset, Original: original, OriginalSize: len(original), At: time.Now().UTC()}
}

// OfPrefix returns d for an original that was never held whole (a line
// skipped for its length): d.Original is its first bytes, size and sum its
// length and SHA-256. Encode keeps them as it keeps those of an original
// it cuts.
func (d DeadLetter) OfPrefix(size int, sum [sha256.Size]byte) DeadLetter {
	d.OriginalSize = size
	d.OriginalSHA256 = hex.EncodeToString(sum[:])
	return d
}

// Encode returns the wire form of d in at most maxBytes bytes (<= 0: about
// 1 MiB, Kafka's default limit). The original is kept whole when it fits;
// otherwise the record keeps a prefix of at most 4 KiB, with the original's
// length (OriginalSize) and SHA-256 (OriginalSHA256), and the error text is
// shortened if even that does not fit. A dead letter is never itself too
// large to produce, which would stall the stream it was meant to unblock.
func (d DeadLetter) Encode(maxBytes int) []byte {
	if maxBytes <= 0 {
		maxBytes = defaultDeadLetterBytes
	}
	orig := d.Original
	if d.OriginalSHA256 == "" {
		d.OriginalSize = len(orig)
	}
	if b := mustMarshal(d); len(b) <= maxBytes {
		return b
	}
	if d.OriginalSHA256 == "" {
		sum := sha256.Sum256(orig)
		d.OriginalSHA256 = hex.EncodeToString(sum[:])
	}
	d.Original = []byte{}
	base := mustMarshal(d)
	for len(base) > maxBytes && d.Error != "" {
		// Only a tiny limit gets here: shorten the error text (by runes,
		// so it stays valid UTF-8) until the record fits.
		r := []rune(d.Error)
		d.Error = string(r[:len(r)/2])
		base = mustMarshal(d)
	}
	// Base64 takes 4 bytes per 3 of the prefix.
	n := min(len(orig), maxDeadLetterOriginal, max(0, (maxBytes-len(base))/4*3))
	for ; n >= 0; n -= 3 {
		d.Original = orig[:n]
		if b := mustMarshal(d); len(b) <= maxBytes || n == 0 {
			return b
		}
	}
	return base
}

func mustMarshal(d DeadLetter) []byte {
	b, err := json.Marshal(d)
	if err != nil {
		// Every field is a plain string, number, time or byte slice.
		panic(fmt.Sprintf("encode dead letter: %v", err))
	}
	return b
}

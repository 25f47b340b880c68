package wire

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mimlstream/mimlstream/schemas"
)

// maxDeadLetterOriginal caps the original bytes kept for an oversize
// message, so a dead letter is never itself too large to produce.
const maxDeadLetterOriginal = 4096

// EncodeDeadLetter returns the wire form of the dead letter of a message
// rejected at stage (StageIngest, StageAnnotate) for reason. key, topic,
// partition and offset locate the original when it came from a topic
// (offset -1 when it did not); original is kept whole, except that an
// oversize message keeps only its first 4 KiB (OriginalSize says how long
// it was).
func EncodeDeadLetter(stage string, reason Reason, err error, key, topic string, partition int, offset int64, original []byte) []byte {
	orig := original
	if reason == ReasonOversize && len(orig) > maxDeadLetterOriginal {
		orig = orig[:maxDeadLetterOriginal]
	}
	if orig == nil {
		orig = []byte{}
	}
	d := DeadLetter{SchemaVersion: schemas.Version, Reason: reason, Error: err.Error(), Stage: stage, Key: key, Topic: topic,
		Partition: partition, Offset: offset, Original: orig, OriginalSize: len(original), At: time.Now().UTC()}
	b, merr := json.Marshal(d)
	if merr != nil {
		// Every field is a plain string, number or byte slice.
		panic(fmt.Sprintf("encode dead letter: %v", merr))
	}
	return b
}

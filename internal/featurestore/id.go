package featurestore

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"time"
)

// crockford is the ULID alphabet: Crockford's base32, without I, L, O, U.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// newULID returns a ULID (github.com/ulid/spec): 48 bits of milliseconds
// since the Unix epoch, then 80 random bits, as 26 base32 digits. IDs sort
// by creation time, and two registries, or one registry before and after
// losing its data, draw the same ID with probability 2^-80 per
// millisecond.
func newULID(t time.Time) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[6:]); err != nil {
		return "", fmt.Errorf("version id: %w", err)
	}
	ms := uint64(t.UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	return encodeULID(b), nil
}

// encodeULID writes the 128 bits of b, most significant first, as 26
// base32 digits (the first digit holds the top 3 bits).
func encodeULID(b [16]byte) string {
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

package wire

import (
	"strings"
	"unsafe"
)

// BagID reads the top-level "id" of a JSON bag message without decoding
// the rest, with the bag decoder's own grammar: the members before the id
// are skipped (and checked) as DecodeBag skips them, and nothing after it
// is read. So a message cut short after its id (the first bytes of a line
// too long to hold) or faulty beyond it still names its bag, and a
// publisher can key a batch by its bags' ids before decoding them. ok is
// false when no string id is read before a fault or the end of raw; an id
// that DecodeBag would find ambiguous (invalid UTF-8, an unpaired
// surrogate escape) is none.
func BagID(raw []byte) (id string, ok bool) {
	// A view of raw: the id returned is copied out of it.
	d := bagDecoder{s: unsafe.String(unsafe.SliceData(raw), len(raw))}
	d.space()
	if d.i >= len(d.s) || d.s[d.i] != '{' {
		return "", false
	}
	d.i++
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		return "", false
	}
	for {
		k, err := d.key()
		if err != nil {
			return "", false
		}
		if k == "id" {
			if d.i >= len(d.s) || d.s[d.i] != '"' {
				return "", false
			}
			v, err := d.str()
			if err != nil {
				return "", false
			}
			return strings.Clone(v), true
		}
		if err := d.skip(1); err != nil {
			return "", false
		}
		if more, err := d.next('}'); !more || err != nil {
			return "", false
		}
	}
}

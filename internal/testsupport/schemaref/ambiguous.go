package schemaref

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// checkUnambiguous reports, for a document the reference decoder accepted,
// invalid UTF-8, unpaired surrogate escapes and repeated keys
// (wire.ErrAmbiguous).
func checkUnambiguous(raw []byte) error {
	if !utf8.Valid(raw) {
		i := 0
		for i < len(raw) {
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return fmt.Errorf("%w: invalid UTF-8 at byte %d", wire.ErrAmbiguous, i)
	}
	if err := checkSurrogates(raw); err != nil {
		return err
	}
	return checkDuplicateKeys(raw)
}

// checkSurrogates finds \uXXXX escapes of UTF-16 surrogates that do not
// form a high-low pair. raw is valid JSON.
func checkSurrogates(raw []byte) error {
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\':
			if raw[i+1] != 'u' {
				i++ // a one-character escape
				continue
			}
			r := hex4(raw[i+2 : i+6])
			switch {
			case 0xD800 <= r && r < 0xDC00:
				if i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					if lo := hex4(raw[i+8 : i+12]); 0xDC00 <= lo && lo < 0xE000 {
						i += 11
						continue
					}
				}
				return fmt.Errorf("%w: escaped high surrogate \\u%04X without its low half at byte %d", wire.ErrAmbiguous, r, i)
			case 0xDC00 <= r && r < 0xE000:
				return fmt.Errorf("%w: escaped low surrogate \\u%04X without its high half at byte %d", wire.ErrAmbiguous, r, i)
			}
			i += 5
		}
	}
	return nil
}

// hex4 reads 4 hex digits (valid in a document the reference accepted).
func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b), 16, 32)
	return rune(n)
}

// checkDuplicateKeys walks the document's tokens and reports the first key
// repeated within one object (compared after unescaping, so "a" and
// "\u0061" are the same key).
func checkDuplicateKeys(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	// One frame per open object (keys not nil) or array (keys nil).
	type frame struct {
		keys      map[string]bool
		expectKey bool
	}
	var stack []frame
	// valueDone: a value ended, so an enclosing object expects a key.
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].expectKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if n := len(stack); n > 0 && stack[n-1].expectKey {
			if k, ok := tok.(string); ok {
				if stack[n-1].keys[k] {
					return fmt.Errorf("%w: key %q repeated in one object", wire.ErrAmbiguous, k)
				}
				stack[n-1].keys[k] = true
				stack[n-1].expectKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{keys: map[string]bool{}, expectKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrAmbiguous is the error of a message that JSON parsers may read
// differently: a key repeated in one object (encoding/json keeps the last
// value, others the first or both), invalid UTF-8, or an escaped UTF-16
// surrogate without its pair (encoding/json replaces both with U+FFFD, so
// a bag id would differ between the bytes kept in Kafka and the id
// decoded). Such a message is rejected as malformed, never guessed at.
var ErrAmbiguous = errors.New("ambiguous JSON")

// decodeDocument parses raw into the generic value the schema validator
// takes (map[string]any, []any, json.Number, string, bool, nil), equal to
// what jsonschema.UnmarshalJSON returns, and refuses ambiguous documents
// (ErrAmbiguous) that the reference would accept.
//
// Decoding is a third of the annotator's per-bag work, and most of that is
// encoding/json's byte-at-a-time scanner, which runs twice over a value
// read through a Decoder. A bag message is plain: ASCII keys and ids, and
// numbers, hundreds of them. fastDocument parses exactly that in one pass
// and gives up on anything else (escapes, non-ASCII or control bytes,
// malformed input, deep nesting); those go to jsonschema.UnmarshalJSON, so
// what is rejected, and with what message, is always the reference's.
//
// The fast path cannot meet ambiguity: it takes only ASCII without escapes
// and gives up on a repeated key. The slow path checks after the reference
// accepted the document.
func decodeDocument(raw []byte) (any, error) {
	if doc, ok := fastDocument(raw); ok {
		return doc, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if err := checkUnambiguous(raw); err != nil {
		return nil, err
	}
	return doc, nil
}

// checkUnambiguous reports, for a document the reference decoder accepted,
// invalid UTF-8, unpaired surrogate escapes and repeated keys.
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
		return fmt.Errorf("%w: invalid UTF-8 at byte %d", ErrAmbiguous, i)
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
				return fmt.Errorf("%w: escaped high surrogate \\u%04X without its low half at byte %d", ErrAmbiguous, r, i)
			case 0xDC00 <= r && r < 0xE000:
				return fmt.Errorf("%w: escaped low surrogate \\u%04X without its high half at byte %d", ErrAmbiguous, r, i)
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
					return fmt.Errorf("%w: key %q repeated in one object", ErrAmbiguous, k)
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

// maxFastDepth bounds the recursion of the fast path; deeper documents take
// the reference path (encoding/json allows 10000 levels).
const maxFastDepth = 64

// docParser is a recursive-descent JSON parser over one string: strings and
// numbers are substrings of it, so the message is copied once, not once per
// value.
type docParser struct {
	s string
	i int
}

// fastDocument parses raw, or reports false when it cannot vouch for the
// result being the reference's.
func fastDocument(raw []byte) (any, bool) {
	p := docParser{s: string(raw)}
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	if p.i != len(p.s) {
		return nil, false
	}
	return v, true
}

func (p *docParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *docParser) value(depth int) (any, bool) {
	p.space()
	if p.i >= len(p.s) || depth > maxFastDepth {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, ok := p.str()
		return s, ok
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	default:
		for _, lit := range [...]struct {
			text string
			v    any
		}{{"true", true}, {"false", false}, {"null", nil}} {
			if len(p.s)-p.i >= len(lit.text) && p.s[p.i:p.i+len(lit.text)] == lit.text {
				p.i += len(lit.text)
				return lit.v, true
			}
		}
		return nil, false
	}
}

func (p *docParser) object(depth int) (any, bool) {
	p.i++ // {
	m := map[string]any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return m, true
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, false
		}
		p.i++
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		if _, dup := m[k]; dup {
			return nil, false // ambiguous: the slow path says why
		}
		m[k] = v
		if more, ok := p.next('}'); !ok {
			return nil, false
		} else if !more {
			return m, true
		}
	}
}

func (p *docParser) array(depth int) (any, bool) {
	p.i++ // [
	a := []any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return a, true
	}
	for {
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok := p.next(']'); !ok {
			return nil, false
		} else if !more {
			return a, true
		}
	}
}

// next consumes what follows a member or an element: a comma (more
// follow) or the closing byte end.
func (p *docParser) next(end byte) (more, ok bool) {
	p.space()
	if p.i >= len(p.s) {
		return false, false
	}
	switch p.s[p.i] {
	case ',':
		p.i++
		return true, true
	case end:
		p.i++
		return false, true
	}
	return false, false
}

// str reads a string of printable ASCII without escapes; anything else is
// left to the reference decoder (escapes, UTF-8 validation and replacement).
func (p *docParser) str() (string, bool) {
	p.i++ // "
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", false
		}
		p.i++
	}
	return "", false
}

// number reads a number of the JSON grammar,
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, as the json.Number of its
// literal text, as encoding/json does with UseNumber.
func (p *docParser) number() (any, bool) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case p.digits() == 0:
		return nil, false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return nil, false
		}
	}
	return json.Number(p.s[start:p.i]), true
}

func (p *docParser) digits() int {
	start := p.i
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}

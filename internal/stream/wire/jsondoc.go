package wire

import (
	"bytes"
	"encoding/json"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeDocument parses raw into the generic value the schema validator
// takes (map[string]any, []any, json.Number, string, bool, nil), equal to
// what jsonschema.UnmarshalJSON returns.
//
// Decoding is a third of the annotator's per-bag work, and most of that is
// encoding/json's byte-at-a-time scanner, which runs twice over a value
// read through a Decoder. A bag message is plain: ASCII keys and ids, and
// numbers, hundreds of them. fastDocument parses exactly that in one pass
// and gives up on anything else (escapes, non-ASCII or control bytes,
// malformed input, deep nesting); those go to jsonschema.UnmarshalJSON, so
// what is rejected, and with what message, is always the reference's.
func decodeDocument(raw []byte) (any, error) {
	if doc, ok := fastDocument(raw); ok {
		return doc, nil
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
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
		m[k] = v // a repeated key keeps its last value, as encoding/json does
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

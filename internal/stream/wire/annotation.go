package wire

import (
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// MarshalJSON writes the annotation exactly as encoding/json's reflection
// would (same fields, order, omissions, escaping and number formatting:
// the differential test holds it to that), a few times faster: an
// annotation is written for every bag, and the reflective encoder was a
// third of the annotator's work outside the model. Like encoding/json, it
// fails on a NaN or infinite score.
func (a AnnotationMessage) MarshalJSON() ([]byte, error) {
	n := 256 + 24*(len(a.BagScores)+len(a.BagLabels)) + 8*len(a.InstanceLabels) + 12*len(a.Classes)
	for _, x := range a.InstanceScores {
		n += 24 * len(x)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"schema_version":`...)
	b = strconv.AppendInt(b, int64(a.SchemaVersion), 10)
	b = appendKeyString(b, "bag_id", a.BagID)
	if a.Source != "" {
		b = appendKeyString(b, "source", a.Source)
	}
	b = appendKeyString(b, "model", a.Model)
	b = appendKeyString(b, "model_version", a.ModelVersion)
	if a.ModelID != "" {
		b = appendKeyString(b, "model_id", a.ModelID)
	}
	b = appendKeyString(b, "mode", a.Mode)
	b = append(b, `,"classes":`...)
	b = appendStrings(b, a.Classes)
	if len(a.InstanceLabels) > 0 {
		b = append(b, `,"instance_labels":`...)
		b = appendInts(b, a.InstanceLabels)
	}
	var err error
	if len(a.InstanceScores) > 0 {
		b = append(b, `,"instance_scores":`...)
		if b, err = appendFloatRows(b, a.InstanceScores); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"bag_labels":`...)
	b = appendInts(b, a.BagLabels)
	b = append(b, `,"bag_scores":`...)
	if b, err = appendFloats(b, a.BagScores); err != nil {
		return nil, err
	}
	b = append(b, `,"latency_ms":`...)
	if b, err = appendFloat(b, a.LatencyMS); err != nil {
		return nil, err
	}
	if a.IngestedAt != nil {
		b = append(b, `,"ingested_at":`...)
		if b, err = appendTime(b, *a.IngestedAt); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"annotated_at":`...)
	if b, err = appendTime(b, a.AnnotatedAt); err != nil {
		return nil, err
	}
	if a.Annotator != "" {
		b = appendKeyString(b, "annotator", a.Annotator)
	}
	if b, err = appendProvenance(b, a.Media, a.Featurizer, a.Regions); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendKeyString appends ,"key":"value"; keys need no escaping.
func appendKeyString(b []byte, key, s string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendString(b, s)
}

// appendStrings appends an array of strings; nil is null.
func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendInts appends an array of integers; nil is null.
func appendInts(b []byte, v []int) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return append(b, ']')
}

// appendFloats appends an array of numbers; nil is null.
func appendFloats(b []byte, v []float64) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendFloat(b, x); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendFloatRows appends an array of arrays of numbers (rows not nil).
func appendFloatRows(b []byte, rows [][]float64) ([]byte, error) {
	b = append(b, '[')
	for i, x := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendFloats(b, x); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendFloat formats f as encoding/json does (as ES6 does): plain decimal
// between 1e-6 and 1e21, else exponent notation without padding zeros.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if abs := math.Abs(f); abs >= 1e-6 && abs < 1<<22 {
		// Features are mostly short decimals (MSCV2's have six places),
		// and strconv's shortest formatting spent 50 ns on each. If a
		// multiple of 10⁻⁹ reads back as f, it is the shortest form:
		// below 2²² two neighbouring floats are less than 10⁻⁹ apart, so
		// no other multiple of 10⁻⁹, and hence no shorter decimal (at or
		// above 10⁻⁶ every shorter one is such a multiple), reads back
		// as f. TestAppendFloatMatchesStrconv holds it to strconv. (The
		// product's distance to m turns away most computed values, a
		// score say, before the division that decides.)
		p := abs * 1e9
		if m := math.Round(p); math.Abs(p-m) <= p*0x1p-50 && m/1e9 == abs {
			return appendNanos(b, f < 0, uint64(m)), nil
		}
		if out, ok := appendShortest(b, f); ok {
			return out, nil
		}
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("json: unsupported value: %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		// e-07 to e-7
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b, nil
}

// appendNanos appends m·10⁻⁹ (negated if neg) in plain decimal without
// trailing zeros, as strconv's 'f' format writes its shortest digits.
func appendNanos(b []byte, neg bool, m uint64) []byte {
	if neg {
		b = append(b, '-')
	}
	b = strconv.AppendUint(b, m/1e9, 10)
	frac := m % 1e9
	if frac == 0 {
		return b
	}
	var d [10]byte
	d[0] = '.'
	for i := 9; i > 0; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := len(d)
	for d[n-1] == '0' {
		n--
	}
	return append(b, d[:n]...)
}

// appendTime writes t as its MarshalJSON does: RFC 3339 with nanoseconds,
// an error for a year outside 0 to 9999.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err)
	}
	return append(b, '"'), nil
}

// appendString quotes s as encoding/json does with HTML escaping (its
// default): ", \ and control characters escaped, <, > and & as \u003c,
// \u003e and \u0026, U+2028 and U+2029 escaped, each byte of invalid UTF-8
// written as \ufffd.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

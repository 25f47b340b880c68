package wire

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// The typed decoder of bag messages. It enforces what
// schemas/bag.schema.json says, and the bag invariants the schema cannot
// say, in one pass over the bytes: no generic document, no big.Rat, no
// reflection. The generic JSON Schema validator
// (internal/testsupport/schemaref) is its reference: a differential fuzz
// test holds the two to the same verdict and the same reason on every
// input.
//
// The reason of a rejected message follows the reference's order, from the
// most specific fault to the most general, so a message with several faults
// gets the same reason from both:
//
//  1. oversize: more bytes than the limit;
//  2. malformed_json: not JSON, or JSON that parsers may read differently
//     (ErrAmbiguous: a repeated key, invalid UTF-8, an unpaired surrogate
//     escape), or nested deeper than encoding/json's 10000 levels;
//  3. empty_bag: "instances" or "sparse_instances" is [];
//  4. non_finite: a feature (a dense one, or a value of a sparse instance)
//     that is a number beyond MaxFeatureMagnitude (1e308, or 1e999, too
//     large for a float64) or a string that reads as NaN or ±Inf ("NaN",
//     "-Infinity");
//  5. schema: anything else the schema rejects, integers that do not fit
//     an int, and the rules of a sparse instance the schema states in
//     words (indices strictly ascending, one value per index);
//  6. dimension, labels: the bag invariants (a dense instance whose length
//     is not dim, a sparse index not below dim; labels out of range or not
//     ascending; instance labels not one per instance or out of range;
//     labels with an empty vocabulary).
//
// Syntax faults end decoding at once; the faults of classes 3 to 5 are
// noted and decoding goes on, since a syntax fault later in the message
// would outrank them.

// maxNesting is encoding/json's nesting limit: the reference rejects a
// document nested deeper.
const maxNesting = 10000

// maxIDLength is the schema's maxLength of a bag id, in code points.
const maxIDLength = 256

// ErrAmbiguous is the error of a message that JSON parsers may read
// differently: a key repeated in one object (encoding/json keeps the last
// value, others the first or both), invalid UTF-8, or an escaped UTF-16
// surrogate without its pair (encoding/json replaces both with U+FFFD, so
// a bag id would differ between the bytes kept in Kafka and the id
// decoded). Such a message is rejected as malformed, never guessed at.
var ErrAmbiguous = errors.New("ambiguous JSON")

// errEOF is the syntax error of a message that ends inside a value.
var errEOF = errors.New("unexpected end of JSON input")

// Bits of bagDecoder.seen, one per property of the bag schema.
const (
	seenSchemaVersion = 1 << iota
	seenID
	seenSource
	seenDim
	seenInstances
	seenClasses
	seenLabels
	seenInstanceLabels
	seenSparseInstances
	seenMedia
	seenFeaturizer
	seenRegions
)

// propertyBit returns the seen bit of a bag property, 0 for a property the
// schema does not have.
func propertyBit(key string) uint {
	switch key {
	case "schema_version":
		return seenSchemaVersion
	case "id":
		return seenID
	case "source":
		return seenSource
	case "dim":
		return seenDim
	case "instances":
		return seenInstances
	case "classes":
		return seenClasses
	case "labels":
		return seenLabels
	case "instance_labels":
		return seenInstanceLabels
	case "sparse_instances":
		return seenSparseInstances
	case "media":
		return seenMedia
	case "featurizer":
		return seenFeaturizer
	case "regions":
		return seenRegions
	}
	return 0
}

// bagDecoder is the state of decoding one message. Strings and number
// literals are substrings of s, a view of the message's bytes; what the
// decoded message keeps is copied.
type bagDecoder struct {
	s string
	i int

	seen   uint
	others map[string]bool // properties the schema does not have, for repeats

	// The deferred faults, in the order of their reasons.
	empty     bool
	nonFinite error
	schema    error

	m       BagMessage // every field but Instances and SparseInstances
	floats  []float64  // the features, row after row (sparse: the values)
	rowLens []int      // the features per row (sparse: the entries)
	idx     []int32    // the indices of the sparse instances, one after another
	classes []string   // the class names, views of the message until message() copies them

	// The binary decoder's scratch space for the values of the sparse
	// instances and the entries of each (parseProto).
	vals             []float64
	idxLens, valLens []int
}

// decode decodes and checks one bag message, raw, with d's scratch space
// (the features and row lengths of the previous message, reused), and
// leaves d holding no reference to raw. Errors are *RejectError.
func (d *bagDecoder) decode(raw []byte, maxBytes int) (_ *BagMessage, err error) {
	if maxBytes > 0 && len(raw) > maxBytes {
		return nil, Reject(ReasonOversize, fmt.Errorf("message of %d bytes exceeds the %d-byte limit", len(raw), maxBytes))
	}
	// A view of raw, not a copy: nothing d reads from it outlives this
	// call but through message(), which copies, or an error's text,
	// which fmt copies.
	*d = bagDecoder{s: unsafe.String(unsafe.SliceData(raw), len(raw)), floats: d.floats[:0], rowLens: d.rowLens[:0], idx: d.idx[:0],
		classes: clear0(d.classes), vals: d.vals[:0], idxLens: d.idxLens[:0], valLens: d.valLens[:0]}
	defer func() { d.s, d.m, d.others, d.classes = "", BagMessage{}, nil, clear0(d.classes) }()
	if err := d.document(); err != nil {
		return nil, Reject(ReasonMalformedJSON, err)
	}
	// A readable message names its bag, even when rejected (deferred
	// after the reset above, so it runs first, while d.m holds the id).
	defer func() {
		if err != nil {
			err = withBagID(err, d.m.ID)
		}
	}()
	switch {
	case d.empty:
		return nil, Reject(ReasonEmptyBag, fmt.Errorf("bag %q: %w", d.m.ID, mil.ErrEmptyBag))
	case d.nonFinite != nil:
		return nil, Reject(ReasonNonFinite, d.nonFinite)
	case d.schema != nil:
		return nil, Reject(ReasonSchema, d.schema)
	}
	m := d.message()
	if err := checkInvariants(m); err != nil {
		return nil, err
	}
	return m, nil
}

// clear0 returns s emptied, its elements zeroed so that the scratch holds
// no view of a message after the call that decoded it.
func clear0(s []string) []string {
	clear(s[:cap(s)])
	return s[:0]
}

// schemaf notes a schema fault; the first one is reported.
func (d *bagDecoder) schemaf(format string, args ...any) {
	if d.schema == nil {
		d.schema = fmt.Errorf(format, args...)
	}
}

// message builds the decoded message of a document without faults: the
// rows share one backing array, each capped so an append to one cannot
// spill into the next, and the strings are copied out of the message's
// bytes in one allocation.
func (d *bagDecoder) message() *BagMessage {
	m := d.m
	if d.seen&seenSparseInstances != 0 {
		m.SparseInstances = sparseRows(d.idx, d.floats, d.rowLens)
	} else {
		m.Instances = make([][]float64, len(d.rowLens))
		floats := slices.Clone(d.floats)
		at := 0
		for k, n := range d.rowLens {
			m.Instances[k] = floats[at : at+n : at+n]
			at += n
		}
	}
	n := len(m.ID) + len(m.Source)
	for _, c := range m.Classes {
		n += len(c)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(m.ID)
	b.WriteString(m.Source)
	for _, c := range m.Classes {
		b.WriteString(c)
	}
	all := b.String()
	m.ID, all = all[:len(m.ID)], all[len(m.ID):]
	m.Source, all = all[:len(m.Source)], all[len(m.Source):]
	if m.Classes != nil {
		// Out of the decoder's scratch, which the next message reuses.
		cs := make([]string, len(m.Classes))
		for k, c := range m.Classes {
			cs[k], all = all[:len(c)], all[len(c):]
		}
		m.Classes = cs
	}
	return &m
}

// sparseRows builds sparse instances from their indices and values, one
// instance after another, lens entries each: copies sharing two backing
// arrays, each slice capped so an append to one cannot spill into the
// next, and never nil (an instance without entries has empty arrays, as
// its JSON has).
func sparseRows(idx []int32, vals []float64, lens []int) []mil.SparseVec {
	out := make([]mil.SparseVec, len(lens))
	is := make([]int32, len(idx))
	copy(is, idx)
	vs := make([]float64, len(vals))
	copy(vs, vals)
	at := 0
	for k, n := range lens {
		out[k] = mil.SparseVec{Idx: is[at : at+n : at+n], Val: vs[at : at+n : at+n]}
		at += n
	}
	return out
}

// document decodes the whole message: one value and nothing after it but
// white space.
func (d *bagDecoder) document() error {
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '{' {
		if err := d.bag(); err != nil {
			return err
		}
	} else {
		if err := d.skip(0); err != nil {
			return err
		}
		d.schemaf("a bag is a JSON object")
	}
	d.space()
	if d.i < len(d.s) {
		return d.syntaxErr("after top-level value")
	}
	return nil
}

// bag decodes the top-level object.
func (d *bagDecoder) bag() error {
	d.i++ // {
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
	} else {
		for {
			if err := d.member(); err != nil {
				return err
			}
			more, err := d.next('}')
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
	for _, p := range [...]struct {
		bit  uint
		name string
	}{{seenSchemaVersion, "schema_version"}, {seenID, "id"}, {seenDim, "dim"}} {
		if d.seen&p.bit == 0 {
			d.schemaf("missing required property %q", p.name)
		}
	}
	switch d.seen & (seenInstances | seenSparseInstances) {
	case 0:
		d.schemaf("missing required property \"instances\" or \"sparse_instances\"")
	case seenInstances | seenSparseInstances:
		d.schemaf("both instances and sparse_instances")
	}
	if d.seen&seenLabels != 0 && d.seen&seenClasses == 0 {
		d.schemaf("labels without classes")
	}
	return nil
}

// member decodes one property of the bag object.
func (d *bagDecoder) member() error {
	key, err := d.key()
	if err != nil {
		return err
	}
	bit := propertyBit(key)
	switch {
	case bit == 0 && d.others[key]:
		return fmt.Errorf("%w: key %q repeated in one object", ErrAmbiguous, key)
	case bit == 0:
		if d.others == nil {
			d.others = map[string]bool{}
		}
		d.others[key] = true
	case d.seen&bit != 0:
		return fmt.Errorf("%w: key %q repeated in one object", ErrAmbiguous, key)
	}
	d.seen |= bit
	switch bit {
	case seenSchemaVersion:
		if !d.atNumber() {
			d.schemaf("schema_version is not 1")
			return d.skip(1)
		}
		lit, err := d.number()
		if lit != "1" {
			d.schemaf("schema_version %s, want 1", lit)
		}
		d.m.SchemaVersion = 1
		return err
	case seenID:
		id, err := d.stringValue("id", 1)
		if n := utf8.RuneCountInString(id); err == nil && (n < 1 || n > maxIDLength) {
			d.schemaf("id of %d characters, want 1 to %d", n, maxIDLength)
		}
		d.m.ID = id
		return err
	case seenSource:
		d.m.Source, err = d.stringValue("source", 1)
		return err
	case seenDim:
		d.m.Dim, err = d.integer("dim", 1, 1)
		return err
	case seenInstances:
		return d.instances()
	case seenSparseInstances:
		return d.sparseInstances()
	case seenClasses:
		d.m.Classes, err = d.stringArray()
		return err
	case seenLabels:
		if d.i < len(d.s) && d.s[d.i] == 'n' {
			return d.literal("null") // unlabeled
		}
		d.m.Labels, err = d.integers("labels", 0)
		if !uniqueInts(d.m.Labels) {
			d.schemaf("labels repeat a class")
		}
		return err
	case seenInstanceLabels:
		ls, err := d.integers("instance_labels", -1)
		if len(ls) > 0 {
			d.m.InstanceLabels = ls
		}
		return err
	case seenMedia, seenFeaturizer, seenRegions:
		// Rare and small: checked by the generic decoder on the value's
		// bytes, once the grammar has been (provenance.go).
		start := d.i
		if err := d.skip(1); err != nil {
			return err
		}
		if err := decodeProvenance(key, d.s[start:d.i], &d.m); err != nil {
			d.schemaf("%v", err)
		}
		return nil
	}
	d.schemaf("property %q is not in the bag schema", key)
	return d.skip(1)
}

// key reads an object key and the colon after it, leaving d.i at the
// value.
func (d *bagDecoder) key() (string, error) {
	d.space()
	if d.i >= len(d.s) {
		return "", errEOF
	}
	if d.s[d.i] != '"' {
		return "", d.syntaxErr("looking for beginning of object key string")
	}
	k, err := d.str()
	if err != nil {
		return "", err
	}
	d.space()
	if d.i >= len(d.s) {
		return "", errEOF
	}
	if d.s[d.i] != ':' {
		return "", d.syntaxErr("after object key")
	}
	d.i++
	d.space()
	return k, nil
}

// next consumes what follows a member or an element: a comma (more
// follow) or the closing byte end.
func (d *bagDecoder) next(end byte) (more bool, err error) {
	d.space()
	if d.i >= len(d.s) {
		return false, errEOF
	}
	switch d.s[d.i] {
	case ',':
		d.i++
		return true, nil
	case end:
		d.i++
		return false, nil
	}
	return false, d.syntaxErr("after value")
}

// open consumes the opening byte of an array and reports whether it is
// empty (then its closing byte is consumed too).
func (d *bagDecoder) open() bool {
	d.i++ // [
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return true
	}
	return false
}

// instances decodes the feature vectors: one row after another into one
// backing array, each feature checked for being finite as it is read.
func (d *bagDecoder) instances() error {
	return d.instanceArray("instances", '[', "instance %d is not an array", d.row)
}

// instanceArray decodes the array of instances named name, each opening
// with open and read by item (an instance of another type is a schema
// fault, notType); an empty array marks the bag empty.
func (d *bagDecoder) instanceArray(name string, open byte, notType string, item func(k int) error) error {
	if d.i >= len(d.s) || d.s[d.i] != '[' {
		d.schemaf("%s is not an array", name)
		return d.skip(1)
	}
	if d.open() {
		d.empty = true
		return nil
	}
	for k := 0; ; k++ {
		d.space()
		if d.i < len(d.s) && d.s[d.i] == open {
			if err := item(k); err != nil {
				return err
			}
		} else {
			if err := d.skip(2); err != nil {
				return err
			}
			d.schemaf(notType, k)
		}
		if more, err := d.next(']'); !more {
			return err
		}
	}
}

// row decodes instance k.
func (d *bagDecoder) row(k int) error {
	n := 0
	if d.open() {
		d.schemaf("instance %d has no feature", k)
	} else {
		for ; ; n++ {
			if err := d.feature(k, n); err != nil {
				return err
			}
			more, err := d.next(']')
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
		n++
	}
	d.rowLens = append(d.rowLens, n)
	return nil
}

// feature decodes feature j of instance k: a number, or a fault.
func (d *bagDecoder) feature(k, j int) error { return d.number64(k, j, "feature", 3) }

// number64 decodes a feature nested depth deep, what (of instance k, at
// j) in the errors: a number, or a fault.
func (d *bagDecoder) number64(k, j int, what string, depth int) error {
	d.space()
	switch {
	case d.atNumber():
		if f, ok := d.shortNumber(); ok {
			d.floats = append(d.floats, f)
			return nil
		}
		lit, err := d.number()
		if err != nil {
			return err
		}
		// shortNumber's literals are below 1e15, always usable.
		f := slowFloat(lit)
		if !usable(f) && d.nonFinite == nil {
			d.nonFinite = fmt.Errorf("instance %d %s %d = %s: %w", k, what, j, lit, unusable(f))
		}
		d.floats = append(d.floats, f)
		return nil
	case d.i < len(d.s) && d.s[d.i] == '"':
		s, err := d.str()
		if err != nil {
			return err
		}
		// Spelling NaN or ±Inf as a string is not a type slip but a
		// non-finite feature: say so.
		s = strings.TrimSpace(s)
		f, err := strconv.ParseFloat(s, 64)
		if (err == nil || errors.Is(err, strconv.ErrRange)) && (math.IsNaN(f) || math.IsInf(f, 0)) && d.nonFinite == nil {
			d.nonFinite = fmt.Errorf("instance %d %s %d = %q: %w", k, what, j, s, mil.ErrNonFinite)
		}
		d.schemaf("instance %d %s %d is a string", k, what, j)
		return nil
	}
	d.schemaf("instance %d %s %d is not a number", k, what, j)
	return d.skip(depth)
}

// sparseInstances decodes the sparse instances: the indices of one
// instance after another into d.idx, the values into d.floats, the
// entries of each into d.rowLens.
func (d *bagDecoder) sparseInstances() error {
	return d.instanceArray("sparse_instances", '{', "sparse instance %d is not an object", d.sparseInstance)
}

// sparseInstance decodes sparse instance k, an object {"idx":[...],
// "val":[...]}, with the schema's rules and those it states in words
// (indices strictly ascending, one value per index) as schema faults.
func (d *bagDecoder) sparseInstance(k int) error {
	d.i++ // {
	d.space()
	var hasIdx, hasVal bool // the key was there
	nIdx, nVal := -1, -1    // entries of the array, -1 when not an array
	var others map[string]bool
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
	} else {
		for {
			key, err := d.key()
			if err != nil {
				return err
			}
			switch {
			case (key == "idx" && hasIdx) || (key == "val" && hasVal) || others[key]:
				return fmt.Errorf("%w: key %q repeated in one object", ErrAmbiguous, key)
			case key == "idx":
				hasIdx = true
				if nIdx, err = d.sparseIndices(k); err != nil {
					return err
				}
			case key == "val":
				hasVal = true
				if nVal, err = d.sparseValues(k); err != nil {
					return err
				}
			default:
				if others == nil {
					others = map[string]bool{}
				}
				others[key] = true
				d.schemaf("sparse instance %d: property %q is not in the schema", k, key)
				if err := d.skip(3); err != nil {
					return err
				}
			}
			more, err := d.next('}')
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
	switch {
	case !hasIdx:
		d.schemaf("sparse instance %d: missing required property \"idx\"", k)
	case !hasVal:
		d.schemaf("sparse instance %d: missing required property \"val\"", k)
	case nIdx >= 0 && nVal >= 0 && nIdx != nVal:
		d.schemaf("sparse instance %d: %d indices and %d values", k, nIdx, nVal)
	}
	d.rowLens = append(d.rowLens, max(nIdx, 0))
	return nil
}

// sparseIndices decodes the indices of sparse instance k into d.idx and
// returns how many there are (-1: not an array).
func (d *bagDecoder) sparseIndices(k int) (int, error) {
	if d.i >= len(d.s) || d.s[d.i] != '[' {
		d.schemaf("sparse instance %d: idx is not an array", k)
		return -1, d.skip(3)
	}
	start := len(d.idx)
	if d.open() {
		return 0, nil
	}
	for {
		d.space()
		j, err := d.integer("idx", 0, 4)
		if err != nil {
			return 0, err
		}
		switch n := len(d.idx) - start; {
		case j > math.MaxInt32:
			d.schemaf("sparse instance %d: idx %d is more than %d", k, j, math.MaxInt32)
		case n > 0 && int32(j) <= d.idx[len(d.idx)-1]:
			d.schemaf("sparse instance %d: idx not strictly ascending (%d after %d)", k, j, d.idx[len(d.idx)-1])
		}
		d.idx = append(d.idx, int32(j))
		if more, err := d.next(']'); !more {
			return len(d.idx) - start, err
		}
	}
}

// sparseValues decodes the values of sparse instance k into d.floats and
// returns how many there are (-1: not an array).
func (d *bagDecoder) sparseValues(k int) (int, error) {
	if d.i >= len(d.s) || d.s[d.i] != '[' {
		d.schemaf("sparse instance %d: val is not an array", k)
		return -1, d.skip(3)
	}
	start := len(d.floats)
	if d.open() {
		return 0, nil
	}
	for e := 0; ; e++ {
		if err := d.number64(k, e, "value", 4); err != nil {
			return 0, err
		}
		if more, err := d.next(']'); !more {
			return len(d.floats) - start, err
		}
	}
}

// stringValue decodes a string nested depth deep; another value is a
// schema fault.
func (d *bagDecoder) stringValue(name string, depth int) (string, error) {
	if d.i < len(d.s) && d.s[d.i] == '"' {
		return d.str()
	}
	d.schemaf("%s is not a string", name)
	return "", d.skip(depth)
}

// stringArray decodes the class vocabulary: an array of strings (not nil,
// even when empty).
func (d *bagDecoder) stringArray() ([]string, error) {
	if d.i >= len(d.s) || d.s[d.i] != '[' {
		d.schemaf("classes is not an array")
		return nil, d.skip(1)
	}
	// Into the decoder's scratch (message() copies it): a labeled bag
	// carries the whole vocabulary, and growing a new slice for it was
	// most of the decoder's allocations.
	out := d.classes[:0:cap(d.classes)]
	if out == nil {
		out = []string{} // "classes":[] is not an absent vocabulary
	}
	if d.open() {
		return out, nil
	}
	for {
		d.space()
		s, err := d.stringValue("a class", 2)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		d.classes = out
		if more, err := d.next(']'); !more {
			return out, err
		}
	}
}

// integers decodes an array of integers of at least min (not nil, even
// when empty).
func (d *bagDecoder) integers(name string, min int) ([]int, error) {
	if d.i >= len(d.s) || d.s[d.i] != '[' {
		d.schemaf("%s is not an array", name)
		return nil, d.skip(1)
	}
	out := []int{}
	if d.open() {
		return out, nil
	}
	for {
		d.space()
		n, err := d.integer(name, min, 2)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
		if more, err := d.next(']'); !more {
			return out, err
		}
	}
}

// integer decodes an integer of at least min inside a value nested depth
// deep. The reference accepts as integers what Go's int holds written
// without fraction or exponent: 2.0 and 1e2 are integers to the schema but
// not to the conversion after it, so they are schema faults either way.
func (d *bagDecoder) integer(name string, min, depth int) (int, error) {
	if !d.atNumber() {
		d.schemaf("%s: not an integer", name)
		return 0, d.skip(depth)
	}
	lit, err := d.number()
	if err != nil {
		return 0, err
	}
	n, perr := strconv.Atoi(lit)
	switch {
	case perr != nil:
		d.schemaf("%s: %s is not an integer of %d bits", name, lit, strconv.IntSize)
	case n < min:
		d.schemaf("%s: %d is less than %d", name, n, min)
	}
	return n, nil
}

// pow10 holds the powers of ten a float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// shortNumber reads, at d.i, a number literal with no exponent, at most 15
// significant digits and at most 22 decimals (as json.Marshal writes
// features), and converts it as strconv.ParseFloat does, bit for bit,
// without its generality: the digits form an integer below 2^53 and the
// power of ten is exact, so one division, correctly rounded, gives the
// correctly rounded value (Clinger's fast path, the first that strconv
// tries too). It scans and converts in one pass: the features of a bag are
// most of its bytes, and reading each twice (scanning, then converting)
// was a third of the decoding. It returns false, leaving d.i, for anything
// else; number and strconv then decide. It stops where number stops
// (TestShortNumberMatchesNumber holds it to number and strconv).
func (d *bagDecoder) shortNumber() (float64, bool) {
	s, i := d.s, d.i
	neg := i < len(s) && s[i] == '-'
	if neg {
		i++
	}
	if i >= len(s) || !isDigit(s[i]) {
		return 0, false
	}
	var mant uint64
	digits := 0
	if s[i] == '0' {
		i++
	} else {
		for ; i < len(s) && isDigit(s[i]); i++ {
			mant = mant*10 + uint64(s[i]-'0')
			digits++
		}
	}
	places := 0
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for ; i < len(s) && isDigit(s[i]); i++ {
			mant = mant*10 + uint64(s[i]-'0')
			if mant != 0 {
				digits++
			}
		}
		if places = i - start; places == 0 {
			return 0, false
		}
	}
	if digits > 15 || places >= len(pow10) || (i < len(s) && (s[i] == 'e' || s[i] == 'E')) {
		return 0, false
	}
	f := float64(mant) / pow10[places]
	if neg {
		f = -f
	}
	d.i = i
	return f, true
}

// slowFloat converts a literal of the JSON grammar, which is Go syntax: the
// only error is ErrRange, with ±Inf on overflow (or 0 on underflow, which
// is a number).
func slowFloat(lit string) float64 {
	f, _ := strconv.ParseFloat(lit, 64)
	return f
}

// uniqueInts reports whether no value repeats (the schema's uniqueItems).
func uniqueInts(v []int) bool {
	for i := 1; i < len(v); i++ {
		if v[i] <= v[i-1] {
			// Not ascending (rare: the invariants reject it anyway):
			// sort a copy.
			s := slices.Clone(v)
			slices.Sort(s)
			return len(slices.Compact(s)) == len(v)
		}
	}
	return true
}

// checkInvariants checks what the schema cannot say, on a message that
// passed it: every dense instance of length dim, every sparse index below
// dim; labels ascending class indices
// within the vocabulary, which they need; instance labels one per instance,
// each a class index or -1. The schema already bounds labels (>= 0) and
// instance labels (>= -1) from below.
func checkInvariants(m *BagMessage) error {
	for k, x := range m.Instances {
		if len(x) != m.Dim {
			return Reject(ReasonDimension, fmt.Errorf("bag %q instance %d: %w (got %d, want %d)", m.ID, k, mil.ErrDimension, len(x), m.Dim))
		}
	}
	for k, v := range m.SparseInstances {
		// Ascending: the last index is the largest.
		if n := len(v.Idx); n > 0 && int(v.Idx[n-1]) >= m.Dim {
			return Reject(ReasonDimension, fmt.Errorf("bag %q instance %d: %w (index %d, dim %d)", m.ID, k, mil.ErrDimension, v.Idx[n-1], m.Dim))
		}
	}
	instances := len(m.Instances) + len(m.SparseInstances) // one of them is 0
	classes := len(m.Classes)
	for i, l := range m.Labels {
		if classes > 0 && l >= classes {
			return Reject(ReasonLabels, fmt.Errorf("bag %q label %d: %w", m.ID, l, mil.ErrLabelRange))
		}
		if i > 0 && l <= m.Labels[i-1] {
			return Reject(ReasonLabels, fmt.Errorf("bag %q: %w", m.ID, mil.ErrLabelOrder))
		}
	}
	if m.InstanceLabels != nil {
		if len(m.InstanceLabels) != instances {
			return Reject(ReasonLabels, fmt.Errorf("bag %q: %w (%d labels, %d instances)", m.ID, mil.ErrInstanceMeta, len(m.InstanceLabels), instances))
		}
		for _, l := range m.InstanceLabels {
			if classes > 0 && l >= classes {
				return Reject(ReasonLabels, fmt.Errorf("bag %q instance label %d: %w", m.ID, l, mil.ErrLabelRange))
			}
		}
	}
	if m.Labels != nil && classes == 0 {
		return Reject(ReasonLabels, fmt.Errorf("bag %q: labels without a class vocabulary", m.ID))
	}
	return CheckProvenance(m)
}

// The JSON grammar: values skipped but checked, strings, numbers, literals.

// skip checks one value of any type nested depth deep (the containers
// around it) and moves past it.
func (d *bagDecoder) skip(depth int) error {
	d.space()
	if d.i >= len(d.s) {
		return errEOF
	}
	switch c := d.s[d.i]; c {
	case '{':
		return d.skipObject(depth + 1)
	case '[':
		return d.skipArray(depth + 1)
	case '"':
		_, err := d.str()
		return err
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	if !d.atNumber() {
		return d.syntaxErr("looking for beginning of value")
	}
	_, err := d.number()
	return err
}

func (d *bagDecoder) skipObject(depth int) error {
	if depth > maxNesting {
		return fmt.Errorf("exceeded max depth of %d at byte %d", maxNesting, d.i)
	}
	d.i++ // {
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return nil
	}
	keys := map[string]bool{}
	for {
		k, err := d.key()
		if err != nil {
			return err
		}
		if keys[k] {
			return fmt.Errorf("%w: key %q repeated in one object", ErrAmbiguous, k)
		}
		keys[k] = true
		if err := d.skip(depth); err != nil {
			return err
		}
		if more, err := d.next('}'); !more {
			return err
		}
	}
}

func (d *bagDecoder) skipArray(depth int) error {
	if depth > maxNesting {
		return fmt.Errorf("exceeded max depth of %d at byte %d", maxNesting, d.i)
	}
	if d.open() {
		return nil
	}
	for {
		if err := d.skip(depth); err != nil {
			return err
		}
		if more, err := d.next(']'); !more {
			return err
		}
	}
}

func (d *bagDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// syntaxErr describes the byte at d.i as unexpected, or the end of the
// message.
func (d *bagDecoder) syntaxErr(context string) error {
	if d.i >= len(d.s) {
		return errEOF
	}
	return fmt.Errorf("invalid character %q at byte %d %s", d.s[d.i], d.i, context)
}

func (d *bagDecoder) atNumber() bool {
	return d.i < len(d.s) && (d.s[d.i] == '-' || isDigit(d.s[d.i]))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number reads a number of the JSON grammar,
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, and returns its literal.
func (d *bagDecoder) number() (string, error) {
	start := d.i
	if d.s[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.s) && d.s[d.i] == '0':
		d.i++
	case d.digits() == 0:
		return "", d.syntaxErr("in numeric literal")
	}
	if d.i < len(d.s) && d.s[d.i] == '.' {
		d.i++
		if d.digits() == 0 {
			return "", d.syntaxErr("after decimal point in numeric literal")
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if d.digits() == 0 {
			return "", d.syntaxErr("in exponent of numeric literal")
		}
	}
	return d.s[start:d.i], nil
}

func (d *bagDecoder) digits() int {
	start := d.i
	for d.i < len(d.s) && isDigit(d.s[d.i]) {
		d.i++
	}
	return d.i - start
}

// literal reads the literal word (true, false, null).
func (d *bagDecoder) literal(word string) error {
	if !strings.HasPrefix(d.s[d.i:], word) {
		return d.syntaxErr("in literal " + word)
	}
	d.i += len(word)
	return nil
}

// str reads a string and returns its value: a substring of the message
// when it has no escape. Invalid UTF-8 and unpaired surrogate escapes are
// ErrAmbiguous: encoding/json would replace them with U+FFFD, so the value
// decoded would not be what the bytes say.
func (d *bagDecoder) str() (string, error) {
	d.i++ // "
	start := d.i
	for d.i < len(d.s) {
		switch c := d.s[d.i]; {
		case c == '"':
			d.i++
			return d.s[start : d.i-1], nil
		case c == '\\':
			return d.escapedStr(start)
		case c >= utf8.RuneSelf:
			if err := d.utf8Rune(); err != nil {
				return "", err
			}
		case c < 0x20:
			return "", d.syntaxErr("in string literal")
		default:
			d.i++
		}
	}
	return "", errEOF
}

// escapedStr goes on reading a string from its first escape at d.i; start
// is where its value began.
func (d *bagDecoder) escapedStr(start int) (string, error) {
	b := []byte(d.s[start:d.i])
	for d.i < len(d.s) {
		switch c := d.s[d.i]; {
		case c == '"':
			d.i++
			return string(b), nil
		case c == '\\':
			r, err := d.escape()
			if err != nil {
				return "", err
			}
			b = utf8.AppendRune(b, r)
		case c >= utf8.RuneSelf:
			from := d.i
			if err := d.utf8Rune(); err != nil {
				return "", err
			}
			b = append(b, d.s[from:d.i]...)
		case c < 0x20:
			return "", d.syntaxErr("in string literal")
		default:
			b = append(b, c)
			d.i++
		}
	}
	return "", errEOF
}

// utf8Rune moves past the multi-byte rune at d.i.
func (d *bagDecoder) utf8Rune() error {
	r, n := utf8.DecodeRuneInString(d.s[d.i:])
	if r == utf8.RuneError && n == 1 {
		return fmt.Errorf("%w: invalid UTF-8 at byte %d", ErrAmbiguous, d.i)
	}
	d.i += n
	return nil
}

// escape decodes the escape sequence at d.i, a surrogate pair as one rune.
func (d *bagDecoder) escape() (rune, error) {
	at := d.i
	d.i++ // \
	if d.i >= len(d.s) {
		return 0, errEOF
	}
	c := d.s[d.i]
	d.i++
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
	default:
		d.i--
		return 0, d.syntaxErr("in string escape code")
	}
	r, err := d.hex4()
	switch {
	case err != nil:
		return 0, err
	case r < 0xD800 || r >= 0xE000:
		return r, nil
	case r < 0xDC00 && strings.HasPrefix(d.s[d.i:], `\u`):
		d.i += 2
		lo, err := d.hex4()
		if err != nil {
			return 0, err
		}
		if 0xDC00 <= lo && lo < 0xE000 {
			return utf16.DecodeRune(r, lo), nil
		}
	}
	return 0, fmt.Errorf("%w: escaped UTF-16 surrogate \\u%04X without its other half at byte %d", ErrAmbiguous, r, at)
}

// hex4 reads the 4 hex digits of a \u escape.
func (d *bagDecoder) hex4() (rune, error) {
	var r rune
	for range 4 {
		if d.i >= len(d.s) {
			return 0, errEOF
		}
		c := d.s[d.i]
		switch {
		case isDigit(c):
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, d.syntaxErr("in \\u hexadecimal character escape")
		}
		r = r<<4 | rune(c)
		d.i++
	}
	return r, nil
}

package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/schemas"
)

// The compact binary encoding of bags and annotations: the Protocol
// Buffers wire format of the messages in schemas/mimlstream.proto, written
// and read by hand (protowire) so that no generated code or reflection
// sits on the hot path. JSON stays the default and the documented format;
// the binary one is opt-in (--wire-format protobuf on ingest and the
// annotator) and negotiated per message by the content-type header, so a
// topic may carry both. It exists because float formatting and parsing
// were the largest share of the pipeline's CPU: a feature or a score is 8
// bytes copied here, not 17 digits written and read back.
//
// The decoder of bags enforces what DecodeBag enforces, with the same
// reasons in the same order (CheckEncoded holds the checks of both):
// oversize; malformed_json for bytes that are not the wire format, or that
// parsers may read differently (a singular field repeated, invalid UTF-8:
// the counterparts of a repeated key and invalid UTF-8 in JSON); empty_bag;
// non_finite; schema (a field the schema does not have, a missing or wrong
// required field); then dimension and labels. The one difference: the wire
// format cannot say "no instances" apart from "zero instances", so a bag
// without instances is empty_bag here where JSON without "instances" is a
// schema fault; likewise zero dense instances beside sparse ones are no
// dense instances (JSON: "instances":[] is empty_bag), and a sparse
// instance's empty idx or val is absent (JSON: null is a schema fault).
// Sparse indices are uint32 on the wire: one above 2^31-1 is a schema
// fault (the schema's maximum), one above 2^32-1, which readers would
// truncate, malformed.

// Content types, in the content-type header of every message.
const (
	ContentTypeJSON     = "application/json"
	ContentTypeProtobuf = "application/x-protobuf"
)

// HeaderOriginalContentType, on a dead letter (always JSON) whose original
// is not JSON, names the original's content type: its base64 "original"
// is then the binary encoding.
const HeaderOriginalContentType = "original-content-type"

// Format is a wire encoding of bags and annotations.
type Format string

// The formats: JSON (the default, schemas/*.schema.json) and the Protocol
// Buffers wire format (schemas/mimlstream.proto).
const (
	FormatJSON     Format = "json"
	FormatProtobuf Format = "protobuf"
)

// ParseFormat parses a format name; "" is JSON.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", FormatJSON:
		return FormatJSON, nil
	case FormatProtobuf:
		return FormatProtobuf, nil
	}
	return "", fmt.Errorf("unknown wire format %q (want json or protobuf)", s)
}

// String returns the format's name (a flag.Value).
func (f *Format) String() string { return string(*f) }

// Set parses a --wire-format flag.
func (f *Format) Set(s string) error {
	v, err := ParseFormat(s)
	if err == nil {
		*f = v
	}
	return err
}

// ContentType returns the content-type header value of f.
func (f Format) ContentType() string {
	if f == FormatProtobuf {
		return ContentTypeProtobuf
	}
	return ContentTypeJSON
}

// FormatOf returns the format a content-type header names: protobuf for
// ContentTypeProtobuf, JSON for anything else, a missing header included
// (messages written before the binary format existed).
func FormatOf(contentType string) Format {
	if contentType == ContentTypeProtobuf {
		return FormatProtobuf
	}
	return FormatJSON
}

// Field numbers of schemas/mimlstream.proto.
const (
	bagSchemaVersion   protowire.Number = 1
	bagID              protowire.Number = 2
	bagSource          protowire.Number = 3
	bagDim             protowire.Number = 4
	bagInstances       protowire.Number = 5
	bagClasses         protowire.Number = 6
	bagLabels          protowire.Number = 7
	bagLabeled         protowire.Number = 8
	bagInstanceLabels  protowire.Number = 9
	bagSparseInstances protowire.Number = 10

	instanceFeatures protowire.Number = 1

	sparseIdx protowire.Number = 1
	sparseVal protowire.Number = 2

	annSchemaVersion  protowire.Number = 1
	annBagID          protowire.Number = 2
	annSource         protowire.Number = 3
	annModel          protowire.Number = 4
	annModelVersion   protowire.Number = 5
	annModelID        protowire.Number = 6
	annMode           protowire.Number = 7
	annClasses        protowire.Number = 8
	annInstanceLabels protowire.Number = 9
	annInstanceScores protowire.Number = 10
	annBagLabels      protowire.Number = 11
	annBagScores      protowire.Number = 12
	annLatencyMS      protowire.Number = 13
	annIngestedAt     protowire.Number = 14
	annAnnotatedAt    protowire.Number = 15
	annAnnotator      protowire.Number = 16

	scoresValues protowire.Number = 1

	timestampSeconds protowire.Number = 1
	timestampNanos   protowire.Number = 2
)

// DecodeBagAs is DecodeBagHeaders without a schema-version header.
func (v *Validator) DecodeBagAs(contentType string, raw []byte) (*BagMessage, error) {
	return v.DecodeBagHeaders(contentType, "", raw)
}

// DecodeBagHeaders decodes raw in the format its content-type header
// names, with the checks of DecodeBag, after checking the headers: every
// consumer of bags decodes through it. A content type other than JSON's and the
// binary encoding's is content_type, and so is a value plainly in the
// other encoding (JSON under the protobuf content type); a schema-version
// header other than schemas.Version is schema_version. A missing header
// means JSON, version 1: what a producer that sets no headers (kcat, a
// console producer) writes, the version being in the JSON itself.
func (v *Validator) DecodeBagHeaders(contentType, schemaVersion string, raw []byte) (*BagMessage, error) {
	if schemaVersion != "" && schemaVersion != schemaVersionHeader {
		return nil, Reject(ReasonSchemaVersion, fmt.Errorf("schema-version header %q: this build reads version %s", schemaVersion, schemaVersionHeader))
	}
	f, err := bodyFormat(contentType)
	if err != nil {
		return nil, Reject(ReasonContentType, err)
	}
	if f == FormatProtobuf {
		// '{' opens no bag in the binary encoding (field 15, a group):
		// it is JSON sent under the wrong header.
		if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == '{' {
			return nil, Reject(ReasonContentType, fmt.Errorf("content-type %s, but the value is JSON", ContentTypeProtobuf))
		}
		return v.DecodeBagProto(raw)
	}
	return v.DecodeBag(raw)
}

// schemaVersionHeader is the schema-version header of this build's
// messages.
var schemaVersionHeader = strconv.Itoa(schemas.Version)

// bodyFormat returns the format a bag's content-type header names: "" is
// JSON; parameters other than a UTF-8 charset are refused.
func bodyFormat(contentType string) (Format, error) {
	switch contentType {
	case "", ContentTypeJSON:
		return FormatJSON, nil
	case ContentTypeProtobuf:
		return FormatProtobuf, nil
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", fmt.Errorf("content-type %q: %w", contentType, err)
	}
	if cs, ok := params["charset"]; (ok && !strings.EqualFold(cs, "utf-8")) || len(params) > 1 || (len(params) == 1 && !ok) {
		return "", fmt.Errorf("content-type %q: parameters other than charset=utf-8", contentType)
	}
	switch mt {
	case ContentTypeJSON:
		return FormatJSON, nil
	case ContentTypeProtobuf:
		return FormatProtobuf, nil
	}
	return "", fmt.Errorf("content-type %q: bags are %s or %s", contentType, ContentTypeJSON, ContentTypeProtobuf)
}

// Marshal encodes m in format f: json.Marshal's bytes for JSON.
func (m *BagMessage) Marshal(f Format) ([]byte, error) {
	if f == FormatProtobuf {
		return m.AppendProto(nil), nil
	}
	return m.AppendJSON(nil)
}

// AppendProto appends the binary encoding of m. It never fails: as
// json.Marshal does, it writes each byte of invalid UTF-8 as U+FFFD, and it
// writes what the checks refuse (a NaN feature, a row of the wrong length)
// as it is, for the decoder to refuse. Nil labels are unlabeled, empty
// non-nil labels a negative bag (the labeled field says which).
func (m *BagMessage) AppendProto(b []byte) []byte {
	n := 0
	for _, x := range m.Instances {
		n += 8*len(x) + 4
	}
	for _, v := range m.SparseInstances {
		n += 8*len(v.Val) + 5*len(v.Idx) + 16
	}
	b = growBytes(b, 64+len(m.ID)+len(m.Source)+n+16*len(m.Classes)+4*(len(m.Labels)+len(m.InstanceLabels)))
	b = appendVarintField(b, bagSchemaVersion, uint64(int64(m.SchemaVersion)))
	b = appendStringField(b, bagID, m.ID)
	b = appendStringField(b, bagSource, m.Source)
	b = appendVarintField(b, bagDim, uint64(int64(m.Dim)))
	for _, x := range m.Instances {
		b = protowire.AppendTag(b, bagInstances, protowire.BytesType)
		if len(x) == 0 {
			b = protowire.AppendVarint(b, 0)
			continue
		}
		inner := 8 * len(x)
		b = protowire.AppendVarint(b, uint64(protowire.SizeTag(instanceFeatures)+protowire.SizeBytes(inner)))
		b = appendDoubles(b, instanceFeatures, x)
	}
	for _, v := range m.SparseInstances {
		b = protowire.AppendTag(b, bagSparseInstances, protowire.BytesType)
		idx := 0
		for _, j := range v.Idx {
			idx += protowire.SizeVarint(uint64(uint32(j)))
		}
		inner := 0
		if len(v.Idx) > 0 {
			inner += protowire.SizeTag(sparseIdx) + protowire.SizeBytes(idx)
		}
		if len(v.Val) > 0 {
			inner += protowire.SizeTag(sparseVal) + protowire.SizeBytes(8*len(v.Val))
		}
		b = protowire.AppendVarint(b, uint64(inner))
		if len(v.Idx) > 0 {
			// A negative index is written as its uint32 bits, above
			// 2^31-1: the decoder refuses it as the schema does -1.
			b = protowire.AppendTag(b, sparseIdx, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(idx))
			for _, j := range v.Idx {
				b = protowire.AppendVarint(b, uint64(uint32(j)))
			}
		}
		if len(v.Val) > 0 {
			b = appendDoubles(b, sparseVal, v.Val)
		}
	}
	for _, c := range m.Classes {
		b = protowire.AppendTag(b, bagClasses, protowire.BytesType)
		b = protowire.AppendString(b, coerceUTF8(c))
	}
	b = appendIntsField(b, bagLabels, m.Labels, false)
	if m.Labels != nil {
		b = appendVarintField(b, bagLabeled, 1)
	}
	b = appendIntsField(b, bagInstanceLabels, m.InstanceLabels, true)
	return appendProvenanceProto(b, m.Media, m.Featurizer, m.Regions, bagProvenance)
}

// bagProvenance and annProvenance are the numbers of the media,
// featurizer and regions fields of a Bag and an Annotation.
var (
	bagProvenance = [3]protowire.Number{bagMedia, bagFeaturizer, bagRegions}
	annProvenance = [3]protowire.Number{annMedia, annFeaturizer, annRegions}
)

// DecodeBagProto decodes and checks a bag in the binary encoding, as
// DecodeBag does a JSON one: the same checks, reasons and result (the
// order of CheckEncoded, which the differential tests hold it to). Errors
// are *RejectError.
func (v *Validator) DecodeBagProto(raw []byte) (*BagMessage, error) {
	if v.maxBytes > 0 && len(raw) > v.maxBytes {
		return nil, Reject(ReasonOversize, fmt.Errorf("message of %d bytes exceeds the %d-byte limit", len(raw), v.maxBytes))
	}
	// The JSON decoder's scratch space serves here too: its feature and
	// row buffers, grown to the size of the messages seen.
	d, ok := v.scratch.Get().(*bagDecoder)
	if !ok {
		d = new(bagDecoder)
	}
	m, unknown, err := d.parseProto(raw)
	v.scratch.Put(d)
	if err != nil {
		return nil, Reject(ReasonMalformedJSON, err)
	}
	if err := checkProto(m, unknown); err != nil {
		// A readable message names its bag, even when rejected.
		return nil, withBagID(err, m.ID)
	}
	return m, nil
}

// checkProto checks a bag read from the binary encoding; unknown is
// parseProto's.
func checkProto(m *BagMessage, unknown error) error {
	if len(m.Instances) == 0 && len(m.SparseInstances) == 0 {
		return Reject(ReasonEmptyBag, fmt.Errorf("bag %q: %w", m.ID, mil.ErrEmptyBag))
	}
	if err := checkFinite(m); err != nil {
		return err
	}
	if err := checkSchema(m); err != nil {
		return Reject(ReasonSchema, err)
	}
	// A field the bag does not have is a schema fault, as an unknown
	// property is in JSON, and so is a sparse index above 2^31-1: after
	// the more specific faults, before the bag invariants.
	if unknown != nil {
		return Reject(ReasonSchema, unknown)
	}
	return checkInvariants(m)
}

// parseProto reads the wire format of a bag, with d's feature and row
// buffers as scratch space. The message owns its memory: the features of
// all rows in one allocation, the strings in another. unknown is the first
// schema fault only the encoding shows (a field the schema does not have,
// a sparse index above 2^31-1), reported after the more specific ones;
// err a malformed message. Repeated fields come out nil when empty, as
// DecodeBag leaves out what JSON leaves out (Instances too: a bag of
// sparse instances has none), and labels non-nil when the bag is labeled.
func (d *bagDecoder) parseProto(raw []byte) (m *BagMessage, unknown, err error) {
	m = &BagMessage{}
	floats, rowLens := d.floats[:0], d.rowLens[:0]
	var sp sparseScratch
	sp.idx, sp.vals, sp.idxLens, sp.valLens = d.idx[:0], d.vals[:0], d.idxLens[:0], d.valLens[:0]
	defer func() {
		d.floats, d.rowLens = floats[:0], rowLens[:0]
		d.idx, d.vals, d.idxLens, d.valLens = sp.idx[:0], sp.vals[:0], sp.idxLens[:0], sp.valLens[:0]
	}()
	var buf [32]string
	classes := buf[:0] // views of raw until the copy at the end
	var seen uint64
	labeled := false
	var prov provReader
	b := raw
	singular := func(num protowire.Number) error {
		if seen&(1<<num) != 0 {
			return fmt.Errorf("field %d repeated: %w", num, ErrAmbiguous)
		}
		seen |= 1 << num
		return nil
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, nil, fmt.Errorf("field tag at byte %d: %w", len(raw)-len(b), protowire.ParseError(n))
		}
		at := len(raw) - len(b)
		b = b[n:]
		switch {
		case (num == bagSchemaVersion || num == bagDim || num == bagLabeled) && typ == protowire.VarintType:
			if err := singular(num); err != nil {
				return nil, nil, err
			}
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, nil, fmt.Errorf("field %d at byte %d: %w", num, at, protowire.ParseError(n))
			}
			b = b[n:]
			switch num {
			case bagSchemaVersion:
				m.SchemaVersion = int(int64(x))
			case bagDim:
				m.Dim = int(int64(x))
			default:
				labeled = x != 0
			}
		case (num == bagID || num == bagSource || num == bagClasses) && typ == protowire.BytesType:
			s, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, nil, fmt.Errorf("field %d at byte %d: %w", num, at, protowire.ParseError(n))
			}
			b = b[n:]
			if !utf8.Valid(s) {
				return nil, nil, fmt.Errorf("field %d at byte %d: invalid UTF-8: %w", num, at, ErrAmbiguous)
			}
			v := unsafe.String(unsafe.SliceData(s), len(s))
			switch num {
			case bagID, bagSource:
				if err := singular(num); err != nil {
					return nil, nil, err
				}
				if num == bagID {
					m.ID = v
				} else {
					m.Source = v
				}
			default:
				classes = append(classes, v)
			}
		case num == bagInstances && typ == protowire.BytesType:
			row, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, nil, fmt.Errorf("instance %d: %w", len(rowLens), protowire.ParseError(n))
			}
			b = b[n:]
			before := len(floats)
			var extra bool
			if floats, extra, err = parseInstance(row, floats); err != nil {
				return nil, nil, fmt.Errorf("instance %d: %w", len(rowLens), err)
			}
			if extra && unknown == nil {
				unknown = fmt.Errorf("instance %d: a field the instance does not have", len(rowLens))
			}
			rowLens = append(rowLens, len(floats)-before)
		case num == bagSparseInstances && typ == protowire.BytesType:
			inst, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, nil, fmt.Errorf("sparse instance %d: %w", len(sp.idxLens), protowire.ParseError(n))
			}
			b = b[n:]
			fault, err := sp.parse(inst)
			if err != nil {
				return nil, nil, fmt.Errorf("sparse instance %d: %w", len(sp.idxLens)-1, err)
			}
			if fault != nil && unknown == nil {
				unknown = fmt.Errorf("sparse instance %d: %w", len(sp.idxLens)-1, fault)
			}
		case (num == bagLabels || num == bagInstanceLabels) && (typ == protowire.VarintType || typ == protowire.BytesType):
			zigzag := num == bagInstanceLabels
			dst := &m.Labels
			if zigzag {
				dst = &m.InstanceLabels
			}
			n := consumeInts(b, typ, dst, zigzag)
			if n < 0 {
				return nil, nil, fmt.Errorf("field %d at byte %d: %w", num, at, protowire.ParseError(n))
			}
			b = b[n:]
		case num >= bagMedia && num <= bagRegions:
			n, err := prov.provenanceField(num, typ, b, bagProvenance, &m.Media, &m.Featurizer, &m.Regions)
			if err != nil {
				return nil, nil, fmt.Errorf("field %d at byte %d: %w", num, at, err)
			}
			b = b[n:]
		case num >= bagSchemaVersion && num <= bagSparseInstances:
			return nil, nil, fmt.Errorf("field %d at byte %d: wire type %d: %w", num, at, typ, ErrAmbiguous)
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, nil, fmt.Errorf("field %d at byte %d: %w", num, at, protowire.ParseError(n))
			}
			b = b[n:]
			if unknown == nil {
				unknown = fmt.Errorf("field %d: a field the bag does not have", num)
			}
		}
	}
	if unknown == nil {
		unknown = prov.fault
	}
	switch {
	case len(m.Labels) == 0 && labeled:
		m.Labels = []int{}
	case len(m.Labels) == 0:
		m.Labels = nil
	}
	if len(m.InstanceLabels) == 0 {
		m.InstanceLabels = nil
	}
	if len(rowLens) > 0 {
		all := make([]float64, len(floats))
		copy(all, floats)
		m.Instances = make([][]float64, len(rowLens))
		at := 0
		for k, n := range rowLens {
			m.Instances[k] = all[at : at+n : at+n]
			at += n
		}
	}
	if len(sp.idxLens) > 0 {
		m.SparseInstances = sp.rows()
	}
	// The strings, copied out of raw in one allocation.
	size := len(m.ID) + len(m.Source)
	for _, c := range classes {
		size += len(c)
	}
	var sb strings.Builder
	sb.Grow(size)
	sb.WriteString(m.ID)
	sb.WriteString(m.Source)
	for _, c := range classes {
		sb.WriteString(c)
	}
	str := sb.String()
	cut := func(n int) string {
		s := str[:n]
		str = str[n:]
		return s
	}
	m.ID, m.Source = cut(len(m.ID)), cut(len(m.Source))
	if len(classes) > 0 {
		m.Classes = make([]string, len(classes))
		for k, c := range classes {
			m.Classes[k] = cut(len(c))
		}
	}
	return m, unknown, nil
}

// sparseScratch collects the sparse instances of a binary bag: indices and
// values one instance after another, and how many of each per instance
// (which may differ: checkSchema refuses that).
type sparseScratch struct {
	idx              []int32
	vals             []float64
	idxLens, valLens []int
}

// parse appends one SparseInstance message. fault is a schema fault of the
// encoding (a field the instance does not have, an index above 2^31-1),
// for the caller to report after the more specific ones; err a malformed
// message.
func (sp *sparseScratch) parse(b []byte) (fault, err error) {
	idx0, val0 := len(sp.idx), len(sp.vals)
	// Counted whatever happens, so that the caller names the instance.
	sp.idxLens, sp.valLens = append(sp.idxLens, 0), append(sp.valLens, 0)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == sparseIdx && (typ == protowire.VarintType || typ == protowire.BytesType):
			var ok bool
			n, ok = sp.consumeIdx(b, typ)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			if !ok {
				return nil, fmt.Errorf("idx above 2^32-1, which readers of a uint32 truncate: %w", ErrAmbiguous)
			}
		case num == sparseVal && typ == protowire.BytesType: // packed
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, protowire.ParseError(m)
			}
			if len(v)%8 != 0 {
				return nil, fmt.Errorf("packed doubles of %d bytes: %w", len(v), ErrAmbiguous)
			}
			sp.vals = appendLE64s(sp.vals, v)
			n = m
		case num == sparseVal && typ == protowire.Fixed64Type:
			x, m := protowire.ConsumeFixed64(b)
			if m < 0 {
				return nil, protowire.ParseError(m)
			}
			sp.vals = append(sp.vals, math.Float64frombits(x))
			n = m
		case num == sparseIdx || num == sparseVal:
			return nil, fmt.Errorf("field %d: wire type %d: %w", num, typ, ErrAmbiguous)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			if fault == nil {
				fault = fmt.Errorf("field %d: a field the sparse instance does not have", num)
			}
		}
		b = b[n:]
	}
	k := len(sp.idxLens) - 1
	sp.idxLens[k], sp.valLens[k] = len(sp.idx)-idx0, len(sp.vals)-val0
	for _, j := range sp.idx[idx0:] {
		if j < 0 && fault == nil {
			fault = fmt.Errorf("idx %d is more than %d", uint32(j), math.MaxInt32)
		}
	}
	return fault, nil
}

// consumeIdx reads one occurrence of the repeated uint32 idx, packed or
// not, appending to sp.idx (an index above 2^31-1 as a negative int32,
// for parse to refuse); it returns the bytes read or a protowire error
// code (< 0), and ok false for a varint above 2^32-1.
func (sp *sparseScratch) consumeIdx(b []byte, typ protowire.Type) (n int, ok bool) {
	if typ == protowire.VarintType {
		x, n := protowire.ConsumeVarint(b)
		if n < 0 || x > math.MaxUint32 {
			return n, n < 0
		}
		sp.idx = append(sp.idx, int32(uint32(x)))
		return n, true
	}
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return n, true
	}
	for len(v) > 0 {
		x, m := protowire.ConsumeVarint(v)
		if m < 0 {
			return m, true
		}
		if x > math.MaxUint32 {
			return n, false
		}
		sp.idx = append(sp.idx, int32(uint32(x)))
		v = v[m:]
	}
	return n, true
}

// rows builds the sparse instances, owning their memory: indices and values
// in one allocation each, each instance's slices capped, never nil.
func (sp *sparseScratch) rows() []mil.SparseVec {
	out := make([]mil.SparseVec, len(sp.idxLens))
	is := make([]int32, len(sp.idx))
	copy(is, sp.idx)
	vs := make([]float64, len(sp.vals))
	copy(vs, sp.vals)
	ai, av := 0, 0
	for k := range out {
		ni, nv := sp.idxLens[k], sp.valLens[k]
		out[k] = mil.SparseVec{Idx: is[ai : ai+ni : ai+ni], Val: vs[av : av+nv : av+nv]}
		ai, av = ai+ni, av+nv
	}
	return out
}

// parseInstance appends the features of one Instance message to floats. It
// reports extra when the instance has a field it should not: a schema
// fault the caller notes.
func parseInstance(b []byte, floats []float64) (_ []float64, extra bool, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false, protowire.ParseError(n)
		}
		b = b[n:]
		if num != instanceFeatures {
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, false, protowire.ParseError(n)
			}
			b, extra = b[n:], true
			continue
		}
		switch typ {
		case protowire.BytesType: // packed
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, false, protowire.ParseError(n)
			}
			if len(v)%8 != 0 {
				return nil, false, fmt.Errorf("packed doubles of %d bytes: %w", len(v), ErrAmbiguous)
			}
			for i := 0; i < len(v); i += 8 {
				floats = append(floats, math.Float64frombits(le64(v[i:])))
			}
			b = b[n:]
		case protowire.Fixed64Type:
			v, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				return nil, false, protowire.ParseError(n)
			}
			floats = append(floats, math.Float64frombits(v))
			b = b[n:]
		default:
			return nil, false, fmt.Errorf("features: wire type %d: %w", typ, ErrAmbiguous)
		}
	}
	return floats, extra, nil
}

// consumeInts reads one occurrence of a repeated integer field, packed or
// not (typ VarintType or BytesType; the callers check), appending to dst;
// it returns the bytes read or a protowire error code (< 0).
func consumeInts(b []byte, typ protowire.Type, dst *[]int, zigzag bool) int {
	conv := func(x uint64) int {
		if zigzag {
			return int(protowire.DecodeZigZag(x))
		}
		return int(int64(x))
	}
	switch typ {
	case protowire.VarintType:
		x, n := protowire.ConsumeVarint(b)
		if n >= 0 {
			*dst = append(*dst, conv(x))
		}
		return n
	case protowire.BytesType:
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return n
		}
		if *dst == nil {
			*dst = make([]int, 0, len(v))
		}
		for len(v) > 0 {
			x, m := protowire.ConsumeVarint(v)
			if m < 0 {
				return m
			}
			*dst = append(*dst, conv(x))
			v = v[m:]
		}
		return n
	}
	return -1 // not reached: the callers pass the two wire types above
}

// MarshalAs encodes the annotation in format f.
func (a AnnotationMessage) MarshalAs(f Format) ([]byte, error) {
	if f == FormatProtobuf {
		return a.MarshalProto()
	}
	return a.MarshalJSON()
}

// MarshalProto writes the binary encoding of the annotation. Like
// MarshalJSON, it fails on a NaN or infinite score and on a time outside
// the years 0 to 9999, so that a model fault is one in either format.
func (a AnnotationMessage) MarshalProto() ([]byte, error) {
	n := 160 + len(a.BagID) + len(a.Source) + len(a.Model) + len(a.ModelVersion) + len(a.ModelID) + len(a.Annotator) +
		8*len(a.BagScores) + 4*(len(a.BagLabels)+len(a.InstanceLabels))
	for _, c := range a.Classes {
		n += len(c) + 2
	}
	for _, x := range a.InstanceScores {
		n += 8*len(x) + 4
	}
	b := make([]byte, 0, n)
	b = appendVarintField(b, annSchemaVersion, uint64(int64(a.SchemaVersion)))
	b = appendStringField(b, annBagID, a.BagID)
	b = appendStringField(b, annSource, a.Source)
	b = appendStringField(b, annModel, a.Model)
	b = appendStringField(b, annModelVersion, a.ModelVersion)
	b = appendStringField(b, annModelID, a.ModelID)
	b = appendStringField(b, annMode, a.Mode)
	for _, c := range a.Classes {
		b = protowire.AppendTag(b, annClasses, protowire.BytesType)
		b = protowire.AppendString(b, coerceUTF8(c))
	}
	b = appendIntsField(b, annInstanceLabels, a.InstanceLabels, true)
	for _, x := range a.InstanceScores {
		if err := finite(x); err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, annInstanceScores, protowire.BytesType)
		if len(x) == 0 {
			b = protowire.AppendVarint(b, 0)
			continue
		}
		b = protowire.AppendVarint(b, uint64(protowire.SizeTag(scoresValues)+protowire.SizeBytes(8*len(x))))
		b = appendDoubles(b, scoresValues, x)
	}
	b = appendIntsField(b, annBagLabels, a.BagLabels, false)
	if err := finite(a.BagScores); err != nil {
		return nil, err
	}
	if len(a.BagScores) > 0 {
		b = appendDoubles(b, annBagScores, a.BagScores)
	}
	if err := finite([]float64{a.LatencyMS}); err != nil {
		return nil, err
	}
	if math.Float64bits(a.LatencyMS) != 0 { // -0 is written, as JSON writes it
		b = protowire.AppendTag(b, annLatencyMS, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(a.LatencyMS))
	}
	var err error
	if a.IngestedAt != nil {
		if b, err = appendTimestamp(b, annIngestedAt, *a.IngestedAt); err != nil {
			return nil, err
		}
	}
	if b, err = appendTimestamp(b, annAnnotatedAt, a.AnnotatedAt); err != nil {
		return nil, err
	}
	b = appendStringField(b, annAnnotator, a.Annotator)
	return appendProvenanceProto(b, a.Media, a.Featurizer, a.Regions, annProvenance), nil
}

// DecodeAnnotation decodes an annotation in the format its content-type
// header names (FormatOf). Consumers use it; it checks the encoding, not
// the annotation schema (the annotator wrote it). Times are UTC.
func DecodeAnnotation(contentType string, raw []byte) (AnnotationMessage, error) {
	var a AnnotationMessage
	if FormatOf(contentType) == FormatJSON {
		err := json.Unmarshal(raw, &a)
		return a, err
	}
	a.Classes, a.BagLabels, a.BagScores = []string{}, []int{}, []float64{}
	b := raw
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return a, fmt.Errorf("annotation: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == annSchemaVersion && typ == protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(b)
			a.SchemaVersion = int(int64(x))
		case num >= annBagID && num <= annClasses && typ == protowire.BytesType || num == annAnnotator && typ == protowire.BytesType:
			var s []byte
			s, n = protowire.ConsumeBytes(b)
			v := string(s)
			switch num {
			case annBagID:
				a.BagID = v
			case annSource:
				a.Source = v
			case annModel:
				a.Model = v
			case annModelVersion:
				a.ModelVersion = v
			case annModelID:
				a.ModelID = v
			case annMode:
				a.Mode = v
			case annClasses:
				a.Classes = append(a.Classes, v)
			default:
				a.Annotator = v
			}
		case num == annInstanceLabels && (typ == protowire.VarintType || typ == protowire.BytesType):
			n = consumeInts(b, typ, &a.InstanceLabels, true)
		case num == annBagLabels && (typ == protowire.VarintType || typ == protowire.BytesType):
			n = consumeInts(b, typ, &a.BagLabels, false)
		case num == annInstanceScores && typ == protowire.BytesType:
			var s []byte
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				x, err := consumeScores(s)
				if err != nil {
					return a, fmt.Errorf("annotation: instance scores %d: %w", len(a.InstanceScores), err)
				}
				a.InstanceScores = append(a.InstanceScores, x)
			}
		case num == annBagScores && typ == protowire.BytesType:
			var s []byte
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				if len(s)%8 != 0 {
					return a, fmt.Errorf("annotation: bag scores of %d bytes", len(s))
				}
				a.BagScores = appendLE64s(a.BagScores, s)
			}
		case num == annLatencyMS && typ == protowire.Fixed64Type:
			var x uint64
			x, n = protowire.ConsumeFixed64(b)
			a.LatencyMS = math.Float64frombits(x)
		case (num == annIngestedAt || num == annAnnotatedAt) && typ == protowire.BytesType:
			var s []byte
			if s, n = protowire.ConsumeBytes(b); n >= 0 {
				t, err := parseTimestamp(s)
				if err != nil {
					return a, fmt.Errorf("annotation: field %d: %w", num, err)
				}
				if num == annIngestedAt {
					a.IngestedAt = &t
				} else {
					a.AnnotatedAt = t
				}
			}
		case num >= annMedia && num <= annRegions:
			// Read as a bag's are; a schema fault of theirs is let
			// through, as unknown fields are.
			var prov provReader
			var err error
			if n, err = prov.provenanceField(num, typ, b, annProvenance, &a.Media, &a.Featurizer, &a.Regions); err != nil {
				return a, fmt.Errorf("annotation: field %d: %w", num, err)
			}
		default:
			// A field this version does not know: skipped, as Protocol
			// Buffers readers do.
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return a, fmt.Errorf("annotation: field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return a, nil
}

// consumeScores reads a Scores message.
func consumeScores(b []byte) ([]float64, error) {
	x := []float64{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num != scoresValues || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		s, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		if len(s)%8 != 0 {
			return nil, fmt.Errorf("packed doubles of %d bytes", len(s))
		}
		x = appendLE64s(x, s)
		b = b[n:]
	}
	return x, nil
}

// appendLE64s appends the little-endian doubles of s.
func appendLE64s(dst []float64, s []byte) []float64 {
	for i := 0; i+8 <= len(s); i += 8 {
		dst = append(dst, math.Float64frombits(le64(s[i:])))
	}
	return dst
}

// appendTimestamp appends a google.protobuf.Timestamp field.
func appendTimestamp(b []byte, num protowire.Number, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("time %v: year outside [0,9999]", t)
	}
	sec, nsec := t.Unix(), int64(t.Nanosecond())
	size := 0
	if sec != 0 {
		size += protowire.SizeTag(timestampSeconds) + protowire.SizeVarint(uint64(sec))
	}
	if nsec != 0 {
		size += protowire.SizeTag(timestampNanos) + protowire.SizeVarint(uint64(nsec))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	if sec != 0 {
		b = appendVarintField(b, timestampSeconds, uint64(sec))
	}
	if nsec != 0 {
		b = appendVarintField(b, timestampNanos, uint64(nsec))
	}
	return b, nil
}

// parseTimestamp reads a google.protobuf.Timestamp message, in UTC.
func parseTimestamp(b []byte) (time.Time, error) {
	var sec, nsec int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return time.Time{}, protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.VarintType || (num != timestampSeconds && num != timestampNanos) {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return time.Time{}, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		x, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return time.Time{}, protowire.ParseError(n)
		}
		b = b[n:]
		if num == timestampSeconds {
			sec = int64(x)
		} else {
			nsec = int64(int32(x))
		}
	}
	if nsec < 0 || nsec >= 1e9 {
		return time.Time{}, errors.New("timestamp nanos outside [0, 1e9)")
	}
	return time.Unix(sec, nsec).UTC(), nil
}

// finite returns the error encoding/json gives for a NaN or an infinity.
func finite(v []float64) error {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("json: unsupported value: %v", x)
		}
	}
	return nil
}

func appendVarintField(b []byte, num protowire.Number, x uint64) []byte {
	if x == 0 {
		return b // proto3: a zero scalar is not written
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, x)
}

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, coerceUTF8(s))
}

// appendDoubles appends a packed repeated double field.
func appendDoubles(b []byte, num protowire.Number, v []float64) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(8*len(v)))
	for _, x := range v {
		u := math.Float64bits(x)
		b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24), byte(u>>32), byte(u>>40), byte(u>>48), byte(u>>56))
	}
	return b
}

// appendIntsField appends a packed repeated int64 (or sint64) field; nothing
// for an empty one.
func appendIntsField(b []byte, num protowire.Number, v []int, zigzag bool) []byte {
	if len(v) == 0 {
		return b
	}
	size := 0
	for _, x := range v {
		size += protowire.SizeVarint(intWire(x, zigzag))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	for _, x := range v {
		b = protowire.AppendVarint(b, intWire(x, zigzag))
	}
	return b
}

func intWire(x int, zigzag bool) uint64 {
	if zigzag {
		return protowire.EncodeZigZag(int64(x))
	}
	return uint64(int64(x))
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// growBytes returns b with room for n more bytes.
func growBytes(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n)
	copy(nb, b)
	return nb
}

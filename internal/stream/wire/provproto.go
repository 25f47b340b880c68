package wire

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mimlstream/mimlstream/internal/media"
)

// A media bag's provenance in the binary encoding: the messages Media,
// Featurizer, Region, Rle and Span of schemas/mimlstream.proto, in fields
// 11 to 13 of a Bag and 17 to 19 of an Annotation. The decoder holds them
// to what the JSON decoder holds the provenance properties to: a field
// they do not have, a hash that is not 64 lower-case hex digits, a
// negative size, count or coordinate, a box of other than 4 numbers, a
// mask size of other than 2 and an empty featurizer name are schema
// faults; a singular field repeated, invalid UTF-8 or a known field of
// another wire type malformed. Then CheckProvenance applies, as for JSON.
//
// What the encoding cannot say, as for instances: an absent and an empty
// repeated field are one thing, so regions [] (which JSON refuses as no
// region for each instance) are no regions here, a featurizer's empty
// params none, and a field holding its zero value is absent (a media
// without a URI, a featurizer of version "").

// Field numbers of the provenance messages.
const (
	bagMedia      protowire.Number = 11
	bagFeaturizer protowire.Number = 12
	bagRegions    protowire.Number = 13

	annMedia      protowire.Number = 17
	annFeaturizer protowire.Number = 18
	annRegions    protowire.Number = 19

	mediaSHA256      protowire.Number = 1
	mediaSize        protowire.Number = 2
	mediaURI         protowire.Number = 3
	mediaContentType protowire.Number = 4

	featurizerName    protowire.Number = 1
	featurizerVersion protowire.Number = 2
	featurizerParams  protowire.Number = 3
	paramKey          protowire.Number = 1
	paramValue        protowire.Number = 2

	regionBBox     protowire.Number = 1
	regionMask     protowire.Number = 2
	regionSpan     protowire.Number = 3
	regionByteSpan protowire.Number = 4

	rleSize   protowire.Number = 1
	rleCounts protowire.Number = 2

	spanStart protowire.Number = 1
	spanEnd   protowire.Number = 2
)

// appendProvenanceProto appends the provenance fields (numbers md, fz,
// rg) of a bag or an annotation. A nil media or featurizer is not
// written, nor are zero regions.
func appendProvenanceProto(b []byte, md *media.Media, f *media.Featurizer, regions []media.Region, nums [3]protowire.Number) []byte {
	var inner []byte
	if md != nil {
		inner = appendStringField(inner[:0], mediaSHA256, md.SHA256)
		inner = appendVarintField(inner, mediaSize, uint64(md.Size))
		inner = appendStringField(inner, mediaURI, md.URI)
		inner = appendStringField(inner, mediaContentType, md.ContentType)
		b = protowire.AppendBytes(protowire.AppendTag(b, nums[0], protowire.BytesType), inner)
	}
	if f != nil {
		inner = appendStringField(inner[:0], featurizerName, f.Name)
		inner = appendStringField(inner, featurizerVersion, f.Version)
		var entry []byte
		for _, k := range slices.Sorted(maps.Keys(f.Params)) {
			// A map entry writes its key and value even when empty, so
			// that the pair is there to read.
			entry = protowire.AppendString(protowire.AppendTag(entry[:0], paramKey, protowire.BytesType), coerceUTF8(k))
			entry = protowire.AppendString(protowire.AppendTag(entry, paramValue, protowire.BytesType), coerceUTF8(f.Params[k]))
			inner = protowire.AppendBytes(protowire.AppendTag(inner, featurizerParams, protowire.BytesType), entry)
		}
		b = protowire.AppendBytes(protowire.AppendTag(b, nums[1], protowire.BytesType), inner)
	}
	for _, r := range regions {
		inner = appendRegionProto(inner[:0], r)
		b = protowire.AppendBytes(protowire.AppendTag(b, nums[2], protowire.BytesType), inner)
	}
	return b
}

// appendRegionProto appends the fields of one Region message.
func appendRegionProto(b []byte, r media.Region) []byte {
	if r.BBox != nil {
		b = appendPackedInts(b, regionBBox, r.BBox[:])
	}
	if m := r.Mask; m != nil {
		var inner []byte
		inner = appendPackedInts(inner, rleSize, m.Size[:])
		if len(m.Counts) > 0 {
			inner = appendPackedInts(inner, rleCounts, m.Counts)
		}
		b = protowire.AppendBytes(protowire.AppendTag(b, regionMask, protowire.BytesType), inner)
	}
	for _, s := range []struct {
		num  protowire.Number
		span *media.Span
	}{{regionSpan, r.Span}, {regionByteSpan, r.ByteSpan}} {
		if s.span == nil {
			continue
		}
		var inner []byte
		inner = appendVarintField(inner, spanStart, uint64(int64(s.span.Start)))
		inner = appendVarintField(inner, spanEnd, uint64(int64(s.span.End)))
		b = protowire.AppendBytes(protowire.AppendTag(b, s.num, protowire.BytesType), inner)
	}
	return b
}

// appendPackedInts appends a packed repeated int64 field, even when every
// element is zero (a box [0,0,0,0] is four numbers, not none).
func appendPackedInts(b []byte, num protowire.Number, v []int) []byte {
	size := 0
	for _, x := range v {
		size += protowire.SizeVarint(uint64(int64(x)))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	for _, x := range v {
		b = protowire.AppendVarint(b, uint64(int64(x)))
	}
	return b
}

// provReader reads the provenance messages. fault is the first schema
// fault seen (reported by the caller after the more specific ones, as the
// JSON decoder defers its schema faults); the functions' errors are
// malformed messages.
type provReader struct {
	fault error
}

func (p *provReader) schemaf(format string, args ...any) {
	if p.fault == nil {
		p.fault = fmt.Errorf("%w: "+format, append([]any{errProvenance}, args...)...)
	}
}

// fields walks the fields of one message, calling f with each; f returns
// the bytes it consumed, or -1 when it does not know the field (which is
// then skipped as a schema fault of the message named what).
func (p *provReader) fields(b []byte, what string, f func(num protowire.Number, typ protowire.Type, b []byte) (int, error)) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%s: %w", what, protowire.ParseError(n))
		}
		b = b[n:]
		n, err := f(num, typ, b)
		if err != nil {
			return fmt.Errorf("%s field %d: %w", what, num, err)
		}
		if n == -1 {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return fmt.Errorf("%s field %d: %w", what, num, protowire.ParseError(n))
			}
			p.schemaf("%s: field %d is not in the schema", what, num)
		}
		b = b[n:]
	}
	return nil
}

// singular reports a singular field met twice as ambiguous.
func singular(seen *uint64, num protowire.Number) error {
	if *seen&(1<<num) != 0 {
		return fmt.Errorf("repeated: %w", ErrAmbiguous)
	}
	*seen |= 1 << num
	return nil
}

// str reads a string field of wire type typ.
func str(typ protowire.Type, b []byte) (string, int, error) {
	if typ != protowire.BytesType {
		return "", 0, fmt.Errorf("wire type %d: %w", typ, ErrAmbiguous)
	}
	s, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return "", 0, protowire.ParseError(n)
	}
	if !utf8.Valid(s) {
		return "", 0, fmt.Errorf("invalid UTF-8: %w", ErrAmbiguous)
	}
	return string(s), n, nil
}

// varint reads an int64 varint field of wire type typ.
func varint(typ protowire.Type, b []byte) (int64, int, error) {
	if typ != protowire.VarintType {
		return 0, 0, fmt.Errorf("wire type %d: %w", typ, ErrAmbiguous)
	}
	x, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, 0, protowire.ParseError(n)
	}
	return int64(x), n, nil
}

// bytesField reads an embedded message field of wire type typ.
func bytesField(typ protowire.Type, b []byte) ([]byte, int, error) {
	if typ != protowire.BytesType {
		return nil, 0, fmt.Errorf("wire type %d: %w", typ, ErrAmbiguous)
	}
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return nil, 0, protowire.ParseError(n)
	}
	return v, n, nil
}

// ints appends one occurrence of a repeated int64 field, packed or not.
func ints(typ protowire.Type, b []byte, dst *[]int) (int, error) {
	if typ != protowire.VarintType && typ != protowire.BytesType {
		return 0, fmt.Errorf("wire type %d: %w", typ, ErrAmbiguous)
	}
	n := consumeInts(b, typ, dst, false)
	if n < 0 {
		return 0, protowire.ParseError(n)
	}
	return n, nil
}

// count checks a decoded count, size or coordinate as the JSON schema's
// integer >= 0 that an int holds.
func (p *provReader) count(x int64, what string) int {
	if x < 0 || x > math.MaxInt {
		p.schemaf("%s %d is not an integer >= 0", what, x)
	}
	return int(x)
}

func (p *provReader) media(b []byte) (*media.Media, error) {
	md := &media.Media{}
	var seen uint64
	hasHash := false
	err := p.fields(b, "media", func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
		switch num {
		case mediaSHA256, mediaURI, mediaContentType:
			s, n, err := str(typ, b)
			if err == nil {
				err = singular(&seen, num)
			}
			switch num {
			case mediaSHA256:
				md.SHA256, hasHash = s, true
			case mediaURI:
				md.URI = s
			default:
				md.ContentType = s
			}
			return n, err
		case mediaSize:
			x, n, err := varint(typ, b)
			if err == nil {
				err = singular(&seen, num)
			}
			md.Size = int64(p.count(x, "media size"))
			return n, err
		}
		return -1, nil
	})
	if err != nil {
		return nil, err
	}
	if !hasHash || md.Validate() != nil {
		p.schemaf("media: sha256 is not 64 lower-case hex digits")
	}
	return md, nil
}

func (p *provReader) featurizer(b []byte) (*media.Featurizer, error) {
	f := &media.Featurizer{}
	var seen uint64
	err := p.fields(b, "featurizer", func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
		switch num {
		case featurizerName, featurizerVersion:
			s, n, err := str(typ, b)
			if err == nil {
				err = singular(&seen, num)
			}
			if num == featurizerName {
				f.Name = s
			} else {
				f.Version = s
			}
			return n, err
		case featurizerParams:
			e, n, err := bytesField(typ, b)
			if err != nil {
				return 0, err
			}
			var k, v string
			var eseen uint64
			err = p.fields(e, "featurizer params entry", func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
				if num != paramKey && num != paramValue {
					return -1, nil
				}
				s, n, err := str(typ, b)
				if err == nil {
					err = singular(&eseen, num)
				}
				if num == paramKey {
					k = s
				} else {
					v = s
				}
				return n, err
			})
			if err != nil {
				return 0, err
			}
			if _, dup := f.Params[k]; dup {
				// JSON's repeated key: readers keep either value.
				return 0, fmt.Errorf("params key %q repeated: %w", k, ErrAmbiguous)
			}
			if f.Params == nil {
				f.Params = map[string]string{}
			}
			f.Params[k] = v
			return n, nil
		}
		return -1, nil
	})
	if err != nil {
		return nil, err
	}
	if f.Name == "" {
		p.schemaf("featurizer: name is not a non-empty string")
	}
	return f, nil
}

func (p *provReader) region(b []byte, k int) (media.Region, error) {
	var r media.Region
	var seen uint64
	var box []int
	what := fmt.Sprintf("region %d", k)
	err := p.fields(b, what, func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
		switch num {
		case regionBBox:
			return ints(typ, b, &box)
		case regionMask:
			v, n, err := bytesField(typ, b)
			if err == nil {
				err = singular(&seen, num)
			}
			if err != nil {
				return 0, err
			}
			r.Mask, err = p.rle(v, what)
			return n, err
		case regionSpan, regionByteSpan:
			v, n, err := bytesField(typ, b)
			if err == nil {
				err = singular(&seen, num)
			}
			if err != nil {
				return 0, err
			}
			s, err := p.span(v, what)
			if num == regionSpan {
				r.Span = s
			} else {
				r.ByteSpan = s
			}
			return n, err
		}
		return -1, nil
	})
	if err != nil {
		return r, err
	}
	switch len(box) {
	case 0:
	case 4:
		r.BBox = new([4]int)
		for i, x := range box {
			r.BBox[i] = p.count(int64(x), what+" bbox")
		}
	default:
		p.schemaf("%s: bbox is not an array of 4 integers", what)
	}
	return r, nil
}

func (p *provReader) rle(b []byte, what string) (*media.RLE, error) {
	var size, counts []int
	err := p.fields(b, what+" mask", func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
		switch num {
		case rleSize:
			return ints(typ, b, &size)
		case rleCounts:
			return ints(typ, b, &counts)
		}
		return -1, nil
	})
	if err != nil {
		return nil, err
	}
	m := &media.RLE{Counts: counts}
	if len(size) != 2 {
		p.schemaf("%s: mask size is not an array of 2 integers", what)
	} else {
		m.Size = [2]int{p.count(int64(size[0]), what+" mask size"), p.count(int64(size[1]), what+" mask size")}
	}
	for _, c := range counts {
		p.count(int64(c), what+" mask count")
	}
	if m.Counts == nil {
		m.Counts = []int{}
	}
	return m, nil
}

func (p *provReader) span(b []byte, what string) (*media.Span, error) {
	s := &media.Span{}
	var seen uint64
	err := p.fields(b, what+" span", func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
		if num != spanStart && num != spanEnd {
			return -1, nil
		}
		x, n, err := varint(typ, b)
		if err == nil {
			err = singular(&seen, num)
		}
		if num == spanStart {
			s.Start = p.count(x, what+" span start")
		} else {
			s.End = p.count(x, what+" span end")
		}
		return n, err
	})
	return s, err
}

// provenanceField reads one provenance field (num among nums: media,
// featurizer, regions) of a bag or an annotation into md, f and regions.
// It returns the bytes read; a media or featurizer met twice is
// ambiguous, as a repeated key is in JSON.
func (p *provReader) provenanceField(num protowire.Number, typ protowire.Type, b []byte, nums [3]protowire.Number,
	md **media.Media, f **media.Featurizer, regions *[]media.Region) (int, error) {
	v, n, err := bytesField(typ, b)
	if err != nil {
		return 0, err
	}
	switch num {
	case nums[0]:
		if *md != nil {
			return 0, fmt.Errorf("media repeated: %w", ErrAmbiguous)
		}
		*md, err = p.media(v)
	case nums[1]:
		if *f != nil {
			return 0, fmt.Errorf("featurizer repeated: %w", ErrAmbiguous)
		}
		*f, err = p.featurizer(v)
	default:
		var r media.Region
		r, err = p.region(v, len(*regions))
		*regions = append(*regions, r)
	}
	return n, err
}

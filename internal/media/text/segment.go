package text

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/mimlstream/mimlstream/internal/media"
)

// ErrInvalidUTF8 marks a document that is not valid UTF-8.
var ErrInvalidUTF8 = errors.New("text is not valid UTF-8")

// ErrSegmenter marks an unknown segmenter or bad window settings.
var ErrSegmenter = errors.New("bad segmenter")

// Span is a part of a document, end exclusive, in code points and in
// UTF-8 bytes.
type Span struct {
	Start     int `json:"start"`
	End       int `json:"end"`
	ByteStart int `json:"byte_start"`
	ByteEnd   int `json:"byte_end"`
}

// Of returns the span's text in doc.
func (s Span) Of(doc string) string { return doc[s.ByteStart:s.ByteEnd] }

// Region returns s as a bag's instance carries it.
func (s Span) Region() media.Region {
	return media.Region{Span: &media.Span{Start: s.Start, End: s.End}, ByteSpan: &media.Span{Start: s.ByteStart, End: s.ByteEnd}}
}

// Word is one word of a document.
type Word struct {
	Span
	Text string // doc[ByteStart:ByteEnd], not lower-cased
}

// CheckUTF8 returns an error wrapping ErrInvalidUTF8 that names the byte
// offset of the first invalid byte, or nil.
func CheckUTF8(doc string) error {
	if utf8.ValidString(doc) {
		return nil
	}
	for i := 0; i < len(doc); {
		r, n := utf8.DecodeRuneInString(doc[i:])
		if r == utf8.RuneError && n <= 1 {
			return fmt.Errorf("%w: invalid byte 0x%02x at byte offset %d", ErrInvalidUTF8, doc[i], i)
		}
		i += n
	}
	return ErrInvalidUTF8 // unreachable: ValidString said otherwise
}

// Words returns the words of doc (see the package doc) in order.
func Words(doc string) ([]Word, error) {
	if err := CheckUTF8(doc); err != nil {
		return nil, err
	}
	ws := words(doc, 0, 0, nil)
	out := make([]Word, len(ws))
	for i, sp := range ws {
		out[i] = Word{Span: sp, Text: sp.Of(doc)}
	}
	return out, nil
}

// words appends the spans of the words of s, which starts at byte b0 and
// code point c0 of its document, to out. The inner loops keep words as
// spans, without their text: a slice without pointers is cheaper to
// allocate, fill and collect.
func words(s string, b0, c0 int, out []Span) []Span {
	if isASCII(s) {
		// Room for a word every 4 bytes: English averages one every 6
		// or 7 (words and the spaces and punctuation between them), and
		// growing the slice as it fills costs more than the spare room.
		return asciiWords(s, b0, c0, slices.Grow(out, len(s)/4))
	}
	return unisegWords(s, b0, c0, slices.Grow(out, len(s)/6))
}

// unisegWords is words by uniseg's UAX #29 word segmentation.
func unisegWords(s string, b0, c0 int, out []Span) []Span {
	state := -1
	b, c := b0, c0
	for len(s) > 0 {
		var w string
		w, s, state = uniseg.FirstWordInString(s, state)
		n := runeCount(w)
		if isWord(w) {
			sp := Span{Start: c, End: c + n, ByteStart: b, ByteEnd: b + len(w)}
			if edgeSpace(w) {
				// UAX #29 joins U+202F NARROW NO-BREAK SPACE to the
				// word after it (ExtendNumLet, WB13a-b): a word never
				// starts or ends with white space here.
				sp = trimText(w, sp)
			}
			out = append(out, sp)
		}
		b += len(w)
		c += n
	}
	return out
}

// asciiWords is words for an ASCII s (code points are bytes), by the UAX
// #29 rules as they apply to ASCII, where uniseg's general state machine
// costs two thirds of a document's featurization. Every ASCII character
// is one of: ALetter (A-Z a-z), Numeric (0-9), ExtendNumLet (_),
// MidLetter (:), MidNumLet (.), Single_Quote ('), MidNum (, ;), or a
// class that no rule joins to a letter or digit. So a word is a run of
// [A-Za-z0-9_] (WB5, WB8-10, WB13a-b), continued across one : . ' between
// two letters (WB6-7) or one , ; . ' between two digits (WB11-12).
// TestASCIIWordsMatchUniseg holds it to uniseg.
func asciiWords(s string, b0, c0 int, out []Span) []Span {
	for i := 0; ; {
		start, end := nextASCIIWord(s, i)
		if start == end {
			return out
		}
		out = append(out, Span{Start: c0 + start, End: c0 + end, ByteStart: b0 + start, ByteEnd: b0 + end})
		i = end
	}
}

// nextASCIIWord returns the first word of the ASCII s at or after byte i,
// by asciiWords' rules, as s[start:end]; start == end when there is none.
func nextASCIIWord(s string, i int) (start, end int) {
	for i < len(s) {
		if !wordByte(s[i]) {
			i++
			continue
		}
		start = i
		for i < len(s) {
			c := s[i]
			if wordByte(c) {
				i++
				continue
			}
			if i+1 < len(s) && i > start {
				p, n := s[i-1], s[i+1]
				if isLetter(p) && isLetter(n) && (c == ':' || c == '.' || c == '\'') ||
					isDigit(p) && isDigit(n) && (c == ',' || c == ';' || c == '.' || c == '\'') {
					i += 2
					continue
				}
			}
			break
		}
		if isWord(s[start:i]) {
			return start, i
		}
	}
	return len(s), len(s)
}

func wordByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' }
func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// edgeSpace reports whether w starts or ends with white space.
func edgeSpace(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	l, _ := utf8.DecodeLastRuneInString(w)
	return unicode.IsSpace(r) || unicode.IsSpace(l)
}

// runeCount is utf8.RuneCountInString with an ASCII fast path (most
// segments are ASCII words).
func runeCount(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return utf8.RuneCountInString(s)
		}
	}
	return len(s)
}

// isWord reports whether a UAX #29 word segment holds a letter or number.
func isWord(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c < utf8.RuneSelf {
			if 'a' <= c|0x20 && c|0x20 <= 'z' || '0' <= c && c <= '9' {
				return true
			}
			continue
		}
		for _, r := range w[i:] {
			if unicode.IsLetter(r) || unicode.IsNumber(r) {
				return true
			}
		}
		return false
	}
	return false
}

// Segmenter names a way of cutting a document into passages.
type Segmenter string

// The segmenters (see the package doc).
const (
	Paragraphs Segmenter = "paragraphs"
	Sentences  Segmenter = "sentences"
	Windows    Segmenter = "windows"
)

// Andrews et al.'s window: 50 words every 25.
const (
	DefaultWindow = 50
	DefaultStride = 25
)

// DefaultSegmenter is the service's: documents are written in paragraphs,
// and a paragraph is about one thing far more often than a window of 50
// words straddling two of them is (on the development documents the
// supervised upper bound of passage accuracy is 0.697 on paragraphs,
// 0.675 on windows). Windows stay for Andrews et al.'s reproduction, and
// cut a paragraph too long to be one passage (DefaultMaxWords).
const DefaultSegmenter = Paragraphs

// DefaultMaxWords is the longest paragraph the paragraphs segmenter keeps
// as one passage: about a printed page. A longer one (a document without
// blank lines, a transcript) is cut into windows, so that its topics can
// still be told apart.
const DefaultMaxWords = 400

// Segmentation selects a segmenter and its settings.
type Segmentation struct {
	Segmenter Segmenter `json:"segmenter"`
	// Window and Stride (words) apply to Windows, and to Paragraphs'
	// windows inside a paragraph of more than MaxWords words; 0 means the
	// default.
	Window int `json:"window,omitempty"`
	Stride int `json:"stride,omitempty"`
	// MaxWords applies to Paragraphs only; 0 means DefaultMaxWords.
	MaxWords int `json:"max_words,omitempty"`
}

// Normalized returns s with its defaults filled in, or an error wrapping
// ErrSegmenter.
func (s Segmentation) Normalized() (Segmentation, error) {
	switch s.Segmenter {
	case "":
		s.Segmenter = DefaultSegmenter
	case Paragraphs, Sentences, Windows:
	default:
		return s, fmt.Errorf("%w: %q (want %s, %s or %s)", ErrSegmenter, s.Segmenter, Paragraphs, Sentences, Windows)
	}
	if s.Segmenter != Paragraphs {
		s.MaxWords = 0
	} else if s.MaxWords == 0 {
		s.MaxWords = DefaultMaxWords
	}
	if s.Segmenter == Sentences {
		s.Window, s.Stride = 0, 0
		return s, nil
	}
	if s.Window == 0 {
		s.Window = DefaultWindow
	}
	if s.Stride == 0 {
		s.Stride = DefaultStride
	}
	if s.Window < 1 || s.Stride < 1 || s.Stride > s.Window {
		return s, fmt.Errorf("%w: window %d, stride %d (want 1 <= stride <= window)", ErrSegmenter, s.Window, s.Stride)
	}
	if s.Segmenter == Paragraphs && s.MaxWords < s.Window {
		return s, fmt.Errorf("%w: max_words %d below the window of %d words", ErrSegmenter, s.MaxWords, s.Window)
	}
	return s, nil
}

// Segment cuts doc into passages. ws are doc's words (Words); nil
// computes them when the segmenter needs them.
func (s Segmentation) Segment(doc string, ws []Word) ([]Span, error) {
	s, err := s.Normalized()
	if err != nil {
		return nil, err
	}
	if err := CheckUTF8(doc); err != nil {
		return nil, err
	}
	var spans []Span
	if ws != nil {
		spans = make([]Span, len(ws))
		for i, w := range ws {
			spans[i] = w.Span
		}
	}
	return s.segment(doc, spans), nil
}

// segment is Segment for a Normalized s, a valid doc and its words' spans
// ws (nil: computed when needed).
func (s Segmentation) segment(doc string, ws []Span) []Span {
	if s.Segmenter == Sentences {
		return sentences(doc)
	}
	if ws == nil {
		ws = words(doc, 0, 0, nil)
	}
	if s.Segmenter == Windows {
		return windows(ws, s.Window, s.Stride)
	}
	ps := paragraphs(doc, nil)
	out := make([]Span, 0, len(ps))
	for _, p := range ps {
		// The paragraph's words: those inside its byte span.
		lo := sort.Search(len(ws), func(i int) bool { return ws[i].ByteStart >= p.ByteStart })
		hi := sort.Search(len(ws), func(i int) bool { return ws[i].ByteStart >= p.ByteEnd })
		if hi-lo > s.MaxWords {
			out = append(out, windows(ws[lo:hi], s.Window, s.Stride)...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// paragraphs appends doc's paragraphs to out.
func paragraphs(doc string, out []Span) []Span {
	// Walk line by line, tracking byte and code-point offsets; a paragraph
	// opens at its first non-blank line and closes at a blank line or the
	// end, then is trimmed.
	b, c := 0, 0
	open := false
	var start Span
	var last Span // the end of the last non-blank line
	for b < len(doc) {
		i := strings.IndexByte(doc[b:], '\n')
		lineEnd := len(doc)
		if i >= 0 {
			lineEnd = b + i
		}
		line := doc[b:lineEnd]
		n := runeCount(line)
		if strings.TrimSpace(line) == "" {
			if open {
				out = append(out, trim(doc, Span{Start: start.Start, End: last.End, ByteStart: start.ByteStart, ByteEnd: last.ByteEnd}))
				open = false
			}
		} else {
			if !open {
				open = true
				start = Span{Start: c, ByteStart: b}
			}
			last = Span{End: c + n, ByteEnd: lineEnd}
		}
		b, c = lineEnd+1, c+n+1 // past the '\n' (one byte, one code point)
	}
	if open {
		out = append(out, trim(doc, Span{Start: start.Start, End: last.End, ByteStart: start.ByteStart, ByteEnd: last.ByteEnd}))
	}
	return out
}

// trim shrinks sp to exclude leading and trailing white space.
func trim(doc string, sp Span) Span { return trimText(sp.Of(doc), sp) }

// trimText is trim for s, the text of sp.
func trimText(s string, sp Span) Span {
	t := strings.TrimLeftFunc(s, unicode.IsSpace)
	sp.Start += runeCount(s[:len(s)-len(t)])
	sp.ByteStart += len(s) - len(t)
	u := strings.TrimRightFunc(t, unicode.IsSpace)
	sp.End -= runeCount(t[len(u):])
	sp.ByteEnd -= len(t) - len(u)
	return sp
}

// sentences returns the UAX #29 sentences of each paragraph of doc.
func sentences(doc string) []Span {
	var out []Span
	for _, p := range paragraphs(doc, nil) {
		// The paragraph's line breaks as spaces: the same bytes and code
		// points, so offsets carry over unchanged.
		s := strings.ReplaceAll(p.Of(doc), "\n", " ")
		s = strings.ReplaceAll(s, "\r", " ")
		b, c := p.ByteStart, p.Start
		state := -1
		for len(s) > 0 {
			var sent string
			sent, s, state = uniseg.FirstSentenceInString(s, state)
			n := runeCount(sent)
			if strings.TrimSpace(sent) != "" {
				out = append(out, trim(doc, Span{Start: c, End: c + n, ByteStart: b, ByteEnd: b + len(sent)}))
			}
			b += len(sent)
			c += n
		}
	}
	return out
}

// windows returns the runs of window words starting every stride words.
func windows(ws []Span, window, stride int) []Span {
	var out []Span
	for i := 0; i < len(ws); i += stride {
		j := min(i+window, len(ws)) - 1
		out = append(out, Span{Start: ws[i].Start, End: ws[j].End, ByteStart: ws[i].ByteStart, ByteEnd: ws[j].ByteEnd})
		if j == len(ws)-1 {
			break
		}
	}
	return out
}

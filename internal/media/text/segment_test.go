package text

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// spanTexts returns the text of each span, read through the code-point
// offsets (the reference) after checking the byte offsets read the same.
func spanTexts(t testing.TB, doc string, spans []Span) []string {
	t.Helper()
	runes := []rune(doc)
	out := make([]string, len(spans))
	for i, sp := range spans {
		if sp.Start < 0 || sp.End > len(runes) || sp.Start > sp.End || sp.ByteStart < 0 || sp.ByteEnd > len(doc) || sp.ByteStart > sp.ByteEnd {
			t.Fatalf("span %d %+v out of range (%d code points, %d bytes)", i, sp, len(runes), len(doc))
		}
		byRune := string(runes[sp.Start:sp.End])
		if got := sp.Of(doc); got != byRune {
			t.Fatalf("span %d %+v: bytes read %q, code points %q", i, sp, got, byRune)
		}
		// The code-point offset is the number of code points before the
		// byte offset: neither can drift from the other.
		if n := utf8.RuneCountInString(doc[:sp.ByteStart]); n != sp.Start {
			t.Fatalf("span %d %+v: %d code points before byte %d", i, sp, n, sp.ByteStart)
		}
		out[i] = byRune
	}
	return out
}

func TestSegmenters(t *testing.T) {
	const doc = "  Première ligne. Encore\nla même phrase!\n \n\nZweiter Absatz: naïve cafe\u0301s?  Oui.\n\n\nfin"
	tests := []struct {
		seg  Segmentation
		want []string
	}{
		{Segmentation{Segmenter: Paragraphs}, []string{
			"Première ligne. Encore\nla même phrase!",
			"Zweiter Absatz: naïve cafe\u0301s?  Oui.",
			"fin"}},
		{Segmentation{Segmenter: Sentences}, []string{
			"Première ligne.", "Encore\nla même phrase!",
			"Zweiter Absatz: naïve cafe\u0301s?", "Oui.", "fin"}},
		{Segmentation{Segmenter: Windows, Window: 4, Stride: 2}, []string{
			"Première ligne. Encore\nla",
			"Encore\nla même phrase",
			"même phrase!\n \n\nZweiter Absatz",
			"Zweiter Absatz: naïve cafe\u0301s",
			"naïve cafe\u0301s?  Oui.\n\n\nfin"}},
		{Segmentation{Segmenter: Windows, Window: 50}, []string{
			"Première ligne. Encore\nla même phrase!\n \n\nZweiter Absatz: naïve cafe\u0301s?  Oui.\n\n\nfin"}},
		// Paragraphs of more than 4 words (6 and 5 here) cut into windows
		// of 3 words every 2; the last, of one word, kept whole.
		{Segmentation{Segmenter: Paragraphs, MaxWords: 4, Window: 3, Stride: 2}, []string{
			"Première ligne. Encore",
			"Encore\nla même",
			"même phrase",
			"Zweiter Absatz: naïve",
			"naïve cafe\u0301s?  Oui",
			"fin"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.seg.Segmenter), func(t *testing.T) {
			spans, err := tt.seg.Segment(doc, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := spanTexts(t, doc, spans)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestWords(t *testing.T) {
	const doc = "Don't stop: 3.14 naïve cafe\u0301 日本語 — e-mail 🙂!"
	ws, err := Words(doc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.Text)
		if w.Of(doc) != w.Text {
			t.Fatalf("word %q reads %q", w.Text, w.Of(doc))
		}
	}
	spanTexts(t, doc, func() []Span {
		s := make([]Span, len(ws))
		for i, w := range ws {
			s[i] = w.Span
		}
		return s
	}())
	// UAX #29: ideographs are one word each, the combining accent stays
	// with its letter, the hyphen splits.
	want := "Don't|stop|3.14|naïve|cafe\u0301|日|本|語|e|mail"
	if strings.Join(got, "|") != want {
		t.Fatalf("words %q, want %q", strings.Join(got, "|"), want)
	}
}

// windowsRef is Andrews et al.'s windows by their definition: word runs
// [i, i+window) for i = 0, stride, ... up to and including the first that
// reaches the last word.
func windowsRef(n, window, stride int) [][2]int {
	var out [][2]int
	for i := 0; n > 0; i += stride {
		out = append(out, [2]int{i, min(i+window, n)})
		if i+window >= n {
			break
		}
	}
	return out
}

func TestWindowsMatchReference(t *testing.T) {
	for n := 0; n <= 130; n++ {
		ws := make([]Span, n)
		for i := range ws {
			ws[i] = Span{Start: 10 * i, End: 10*i + 3, ByteStart: 10 * i, ByteEnd: 10*i + 3}
		}
		for _, ps := range [][2]int{{50, 25}, {4, 2}, {3, 3}, {5, 1}} {
			got := windows(ws, ps[0], ps[1])
			want := windowsRef(n, ps[0], ps[1])
			if len(got) != len(want) {
				t.Fatalf("n=%d window=%d stride=%d: %d windows, want %d", n, ps[0], ps[1], len(got), len(want))
			}
			for k, w := range want {
				if got[k].Start != ws[w[0]].Start || got[k].End != ws[w[1]-1].End {
					t.Fatalf("n=%d window %d: %+v, want words [%d, %d)", n, k, got[k], w[0], w[1])
				}
			}
		}
	}
}

func TestInvalidUTF8(t *testing.T) {
	docs := []struct {
		doc  string
		want string
	}{
		{"ok \xff then", "invalid byte 0xff at byte offset 3"},
		{"é\xc3", "invalid byte 0xc3 at byte offset 2"},
		{"\xed\xa0\x80 surrogate", "invalid byte 0xed at byte offset 0"},
	}
	for _, d := range docs {
		for _, seg := range []Segmenter{Paragraphs, Sentences, Windows} {
			_, err := Segmentation{Segmenter: seg}.Segment(d.doc, nil)
			if !errors.Is(err, ErrInvalidUTF8) || !strings.Contains(err.Error(), d.want) {
				t.Fatalf("%s %q: %v, want ErrInvalidUTF8 with %q", seg, d.doc, err, d.want)
			}
		}
		if _, err := (Featurizer{}).Featurize(d.doc); !errors.Is(err, ErrInvalidUTF8) {
			t.Fatalf("Featurize %q: %v", d.doc, err)
		}
	}
}

func TestSegmentationSettings(t *testing.T) {
	for _, s := range []Segmentation{{Segmenter: "lines"}, {Segmenter: Windows, Window: 10, Stride: 11}, {Segmenter: Windows, Window: -1}, {Segmenter: Paragraphs, MaxWords: 10}} {
		if _, err := s.Segment("a b", nil); !errors.Is(err, ErrSegmenter) {
			t.Fatalf("%+v: %v, want ErrSegmenter", s, err)
		}
	}
}

// pieces are what the random documents are made of: ASCII and multi-byte
// letters (2, 3 and 4 bytes), combining marks, a ZWJ emoji sequence, CJK,
// punctuation, and every kind of space and break the segmenters read.
var pieces = []string{
	"word", "The", "end.", "é", "e\u0301", "naïve", "Ωμέγα", "日本語", "한국어", "🙂", "👩\u200d💻",
	"a\u0308\u0301", "x", "3.14", "don't", "?", "!", ",", " ", " ", "  ", "\u00a0", "\u3000", "\n", "\n\n",
	"\n \n", "\r\n", "\t", "Ünïcödé.", "—", "«quote»",
}

func randomDoc(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(60) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// checkInvariants holds what every segmenter promises on a valid doc.
func checkInvariants(t testing.TB, doc string) {
	t.Helper()
	ws, err := Words(doc)
	if err != nil {
		t.Fatalf("%q: %v", doc, err)
	}
	for i, w := range ws {
		txt := spanTexts(t, doc, []Span{w.Span})[0]
		if txt != w.Text || !isWord(txt) {
			t.Fatalf("%q: word %d %+v reads %q", doc, i, w, txt)
		}
		if i > 0 && w.ByteStart < ws[i-1].ByteEnd {
			t.Fatalf("%q: words %d and %d overlap", doc, i-1, i)
		}
	}
	paras := paragraphs(doc, nil)
	for _, seg := range []Segmentation{{Segmenter: Paragraphs}, {Segmenter: Sentences}, {Segmenter: Windows}, {Segmenter: Windows, Window: 3, Stride: 2},
		{Segmenter: Paragraphs, MaxWords: 4, Window: 3, Stride: 2}} {
		cut := seg.Segmenter == Paragraphs && seg.MaxWords != 0 // long paragraphs cut into windows
		spans, err := seg.Segment(doc, nil)
		if err != nil {
			t.Fatalf("%s %q: %v", seg.Segmenter, doc, err)
		}
		texts := spanTexts(t, doc, spans)
		for i, s := range texts {
			if s == "" || strings.TrimSpace(s) != s {
				t.Fatalf("%s %q: passage %d %q empty or not trimmed", seg.Segmenter, doc, i, s)
			}
			if i > 0 && spans[i].ByteStart <= spans[i-1].ByteStart {
				t.Fatalf("%s %q: passages out of order", seg.Segmenter, doc)
			}
			if seg.Segmenter != Windows && !cut && i > 0 && spans[i].ByteStart < spans[i-1].ByteEnd {
				t.Fatalf("%s %q: passages %d and %d overlap", seg.Segmenter, doc, i-1, i)
			}
			if seg.Segmenter != Windows && hasBlankLine(s) {
				t.Fatalf("%s %q: passage %q holds a blank line", seg.Segmenter, doc, s)
			}
		}
		if cut {
			// Each passage is a paragraph of at most 4 words, or a window
			// of at most 3 words inside one.
			for i, sp := range spans {
				n := 0
				for _, w := range ws {
					if w.ByteStart >= sp.ByteStart && w.ByteEnd <= sp.ByteEnd {
						n++
					}
				}
				whole := slices.Contains(paras, sp) && n <= 4
				inside := n <= 3 && slices.ContainsFunc(paras, func(p Span) bool { return p.ByteStart <= sp.ByteStart && sp.ByteEnd <= p.ByteEnd })
				if !whole && !inside {
					t.Fatalf("%q: passage %d %q (%d words) neither a short paragraph nor a window inside one", doc, i, texts[i], n)
				}
			}
		}
		if seg.Segmenter == Paragraphs && !cut {
			// Every code point outside the paragraphs is white space, and
			// every non-space one is inside one.
			covered := make([]bool, len(doc))
			for _, sp := range spans {
				for b := sp.ByteStart; b < sp.ByteEnd; b++ {
					covered[b] = true
				}
			}
			for b, r := range doc {
				if !covered[b] && !unicode.IsSpace(r) {
					t.Fatalf("%q: %q at byte %d in no paragraph", doc, r, b)
				}
			}
		}
		if seg.Segmenter == Windows {
			n, _ := seg.Normalized()
			if want := len(windowsRef(len(ws), n.Window, n.Stride)); len(spans) != want {
				t.Fatalf("%q: %d windows over %d words, want %d", doc, len(spans), len(ws), want)
			}
		}
	}
}

// hasBlankLine reports whether s holds a line of white space only (s is
// trimmed, so such a line lies between two others).
func hasBlankLine(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) == "" {
			return true
		}
	}
	return false
}

func TestOffsetsProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		checkInvariants(t, randomDoc(r))
	}
}

func FuzzSegment(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		f.Add(randomDoc(r))
	}
	f.Add("a\xffb")
	f.Add("")
	f.Fuzz(func(t *testing.T, doc string) {
		if !utf8.ValidString(doc) {
			if _, err := (Segmentation{}).Segment(doc, nil); !errors.Is(err, ErrInvalidUTF8) {
				t.Fatalf("%q: %v, want ErrInvalidUTF8", doc, err)
			}
			return
		}
		checkInvariants(t, doc)
	})
}

// asciiAlphabet is weighted towards the characters the UAX #29 rules
// treat specially between letters and digits.
const asciiAlphabet = "abZ09__::..'',,;; -\n\r\t\"@#/x1"

// checkASCIIWords holds the ASCII fast path to uniseg's segmentation.
func checkASCIIWords(t testing.TB, s string) {
	t.Helper()
	got := asciiWords(s, 3, 3, nil)
	want := unisegWords(s, 3, 3, nil)
	if len(got) != len(want) {
		t.Fatalf("%q: fast path %v, uniseg %v", s, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%q: word %d: fast path %+v, uniseg %+v", s, i, got[i], want[i])
		}
	}
}

func TestASCIIWordsMatchUniseg(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 20000 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = asciiAlphabet[r.IntN(len(asciiAlphabet))]
		}
		checkASCIIWords(t, string(b))
	}
	// Every pair and triple of distinct ASCII classes' representatives.
	reps := "a0_:.',; -\n\"\x00\x7f"
	for _, x := range reps {
		for _, y := range reps {
			for _, z := range reps {
				checkASCIIWords(t, string([]rune{x, y, z}))
				checkASCIIWords(t, "a"+string([]rune{x, y, z})+"1")
			}
		}
	}
}

func FuzzASCIIWords(f *testing.F) {
	f.Add("don't 3.14 a:b 1,000 x_y")
	f.Fuzz(func(t *testing.T, s string) {
		if !isASCII(s) {
			return
		}
		checkASCIIWords(t, s)
	})
}

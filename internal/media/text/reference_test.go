package text

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// featurizeRef is Featurize as first written, kept as the reference the
// fast path is held to: words by uniseg alone (no ASCII path), each word
// form's Term computed from its surface form once per document (no
// lower-cased keys, no TermCache), features as (index, float sign) pairs
// sorted by a comparison function and their signs summed as floats.
func featurizeRef(f Featurizer, doc string) (Document, error) {
	f, err := f.Normalized()
	if err != nil {
		return Document{}, err
	}
	if err := CheckUTF8(doc); err != nil {
		return Document{}, err
	}
	var ws []Word
	for _, sp := range unisegWords(doc, 0, 0, nil) {
		ws = append(ws, Word{Span: sp, Text: sp.Of(doc)})
	}
	spans, err := f.Segment(doc, ws)
	if err != nil {
		return Document{}, err
	}
	type hashed struct {
		idx  int32
		sign float64
	}
	hs := make([]hashed, len(ws))
	memo := map[string]hashed{}
	for i, w := range ws {
		h, ok := memo[w.Text]
		if !ok {
			h = hashed{idx: -1}
			if term := Term(w.Text); term != "" {
				h.idx, h.sign = Hash(term, f.Dim)
			}
			memo[w.Text] = h
		}
		hs[i] = h
	}
	out := Document{Passages: spans, Instances: make([]mil.SparseVec, len(spans))}
	for p, sp := range spans {
		lo := sort.Search(len(ws), func(i int) bool { return ws[i].ByteStart >= sp.ByteStart })
		var buf []hashed
		for i := lo; i < len(ws) && ws[i].ByteEnd <= sp.ByteEnd; i++ {
			if hs[i].idx >= 0 {
				buf = append(buf, hs[i])
			}
		}
		slices.SortFunc(buf, func(a, b hashed) int { return int(a.idx - b.idx) })
		var v mil.SparseVec
		for i := 0; i < len(buf); {
			j, s := i, 0.0
			for ; j < len(buf) && buf[j].idx == buf[i].idx; j++ {
				s += buf[j].sign
			}
			if s != 0 {
				if f.TF == Log {
					s = math.Copysign(1+math.Log(math.Abs(s)), s)
				}
				v.Idx = append(v.Idx, buf[i].idx)
				v.Val = append(v.Val, s)
			}
			i = j
		}
		if f.L2 {
			normalize(v)
		}
		out.Instances[p] = v
	}
	return out, nil
}

// englishWords mixes stop words, inflections that stem alike, capitals,
// numbers, apostrophes, words that are not ASCII, and long words.
var englishWords = []string{
	"the", "The", "THE", "a", "A", "I", "of", "and", "to", "in", "is", "it", "that", "was", "for", "on",
	"ourselves", "Ourselves", "cat", "cats", "Cats", "CATS", "run", "runs", "running", "Running", "runner",
	"ran", "generous", "generously", "generosity", "connect", "connected", "connection", "connections",
	"Connecting", "relational", "conditional", "rational", "valency", "hopeful", "goodness", "formalize",
	"electrical", "adjustable", "dependent", "adoption", "happy", "happily", "sky", "skies", "dying",
	"lying", "news", "innings", "proceed", "exceed", "succeed", "andes", "atlas", "cosmos", "bias",
	"don't", "Don't", "isn't", "cats'", "3.14", "1,000", "2026", "x", "y", "e.g", "U.S.A", "a:b",
	"user_name", "___", "Yes", "yes", "YES", "Mac", "mac", "Windows", "windows", "crypto", "Crypto",
	"Ünïcödé", "café", "CAFÉ", "cafe\u0301", "naïve", "Naïve", "résumé", "日本", "Ωmega", "straße",
	// Past the term cache's 15-byte keys, around them, and in capitals.
	"internationalization", "Internationalizations", "antidisestablishmentarianism", "Überinternationalisierung",
	"characterization", "characterizations", "responsibilities", "abcdefghijklmno", "ABCDEFGHIJKLMNOP",
}

// separators joins words as text does, with blank lines between
// paragraphs and now and then a character of another script.
var separators = []string{
	" ", " ", " ", " ", ", ", ". ", "! ", "? ", "; ", ": ", " - ", "\n", "\n\n", "\r\n\r\n", "\t",
	" (", ") ", " \"", "\" ", "'", "/", "@", " — ", "\u00a0", "\u202f", " «", "» ", "\n \n", "...",
}

// englishDoc returns a document of up to n words from englishWords.
func englishDoc(r *rand.Rand, n int) string {
	var b strings.Builder
	for range r.IntN(n + 1) {
		b.WriteString(englishWords[r.IntN(len(englishWords))])
		b.WriteString(separators[r.IntN(len(separators))])
	}
	return b.String()
}

// referenceSettings are the featurizers the fast path is held to the
// reference under: every segmenter, both weightings, with and without
// L2, and dimensions small enough that features collide and signs cancel.
func referenceSettings() []Featurizer {
	var out []Featurizer
	for _, seg := range []Segmentation{{Segmenter: Paragraphs}, {Segmenter: Sentences}, {Segmenter: Windows},
		{Segmenter: Windows, Window: 3, Stride: 2}, {Segmenter: Paragraphs, MaxWords: 6, Window: 4, Stride: 2}} {
		for _, dim := range []int{2, 16, DefaultDim} {
			for _, tf := range []TF{Raw, Log} {
				out = append(out, Featurizer{Segmentation: seg, Dim: dim, TF: tf, L2: dim == 16})
			}
		}
	}
	return out
}

// checkAgainstReference featurizes doc with f and with f sharing cache,
// by its segmenter and by the spans of its passages, and fails unless
// each equals featurizeRef's Document.
func checkAgainstReference(t testing.TB, f Featurizer, cache *TermCache, doc string) {
	t.Helper()
	want, werr := featurizeRef(f, doc)
	for _, g := range []Featurizer{f, {Segmentation: f.Segmentation, Dim: f.Dim, TF: f.TF, L2: f.L2, Terms: cache}} {
		got, err := g.Featurize(doc)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%+v %q: error %v, reference %v", f, doc, err, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v (cache %t) %q:\n got %+v\nwant %+v", f, g.Terms != nil, doc, got, want)
		}
		if werr != nil || len(want.Passages) == 0 {
			continue // FeaturizeSpans of no spans gives empty slices, not nil
		}
		// The same passages given by their code points.
		cps := make([]Span, len(want.Passages))
		for i, p := range want.Passages {
			cps[i] = Span{Start: p.Start, End: p.End}
		}
		if got, err := g.FeaturizeSpans(doc, cps); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v (cache %t) %q: FeaturizeSpans %+v, %v\nwant %+v", f, g.Terms != nil, doc, got, err, want)
		}
	}
}

// TestFeaturizeMatchesReference holds Featurize, with and without a term
// cache, to featurizeRef: the same Document, bit for bit, on English-like
// and random Unicode documents under every setting.
func TestFeaturizeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, f := range referenceSettings() {
		t.Run(fmt.Sprintf("%s/%d/%d/%d/%s/%t", f.Segmenter, f.Window, f.MaxWords, f.Dim, f.TF, f.L2), func(t *testing.T) {
			// One cache across the documents of a setting, as ingest
			// keeps one: a later document's words are found in it.
			cache := NewTermCache(1 << 20)
			for range 150 {
				checkAgainstReference(t, f, cache, englishDoc(r, 120))
				checkAgainstReference(t, f, cache, randomDoc(r))
			}
		})
	}
}

// TestTermKey: the key of a word has the word's term, and lower-cased
// ASCII words are keyed by themselves.
func TestTermKey(t *testing.T) {
	var buf []byte
	for _, w := range append(englishWords, "", "Z", "aZ", "ALL_CAPS_99", "MiXeD.CaSe", "Éa", "aÉ") {
		key, lowered := termKey(w, &buf)
		if lowered {
			key = string(buf)
		}
		if Term(key) != Term(w) {
			t.Errorf("termKey(%q) = %q: term %q, the word's %q", w, key, Term(key), Term(w))
		}
		if hasCapitals := isASCII(w) && strings.ToLower(w) != w; lowered != hasCapitals {
			t.Errorf("termKey(%q): lowered %t", w, lowered)
		}
		if isASCII(w) && key != strings.ToLower(w) || !isASCII(w) && key != w {
			t.Errorf("termKey(%q) = %q", w, key)
		}
	}
}

func FuzzFeaturizeMatchesReference(f *testing.F) {
	r := rand.New(rand.NewPCG(23, 24))
	for range 10 {
		f.Add(englishDoc(r, 40), uint8(r.IntN(256)))
		f.Add(randomDoc(r), uint8(r.IntN(256)))
	}
	settings := referenceSettings()
	f.Fuzz(func(t *testing.T, doc string, setting uint8) {
		fz := settings[int(setting)%len(settings)]
		if !utf8.ValidString(doc) {
			if _, err := fz.Featurize(doc); err == nil {
				t.Fatalf("%q: invalid UTF-8 featurized", doc)
			}
			return
		}
		checkAgainstReference(t, fz, NewTermCache(1<<10), doc)
	})
}

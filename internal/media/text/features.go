package text

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"github.com/twmb/murmur3"
	"golang.org/x/text/unicode/norm"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/mil"
)

// TF is the weighting of a term's signed count v in a passage.
type TF string

// The term weightings.
const (
	// Raw keeps v.
	Raw TF = "raw"
	// Log is sign(v)·(1+ln|v|): a word said five times is not five times
	// the evidence.
	Log TF = "log"
)

// DefaultDim is the hashed feature dimension, 2^17 (see the package doc).
const DefaultDim = 1 << 17

// FeaturizerName and FeaturizerVersion identify this featurizer; the
// version changes whenever the same settings would give other vectors.
const (
	FeaturizerName    = "text-hash"
	FeaturizerVersion = "1"
)

// ErrFeaturizer marks bad featurizer settings.
var ErrFeaturizer = errors.New("bad text featurizer settings")

// Featurizer turns a document into passages and their sparse vectors.
// The zero value is DefaultSegmenter's passages (paragraphs, long ones cut
// into windows), DefaultDim features and Log term weights.
type Featurizer struct {
	Segmentation
	Dim int `json:"dim,omitempty"`
	TF  TF  `json:"tf,omitempty"`
	// L2 normalises each passage's vector. Leave it false when a model
	// applies IDF (package tfidf), which normalises after weighting.
	L2 bool `json:"l2,omitempty"`
	// Terms, when set, remembers each word form's term across documents
	// (stemming is over half the cost of a document without it), shared
	// by the goroutines that featurize with it, and recycles their
	// per-document buffers. It changes no vector.
	Terms *TermCache `json:"-"`
}

// TermCache maps word forms (lower-cased when ASCII) to their hashed
// terms, up to a bound. Safe for concurrent use.
type TermCache struct {
	mu sync.RWMutex
	// Words of up to 15 bytes, nearly all, are keyed by their bytes in
	// the map's own slots: no string to allocate, nor to fetch from
	// elsewhere in memory to compare.
	short map[shortKey]termHash
	long  map[string]termHash
	limit int
	// scratch recycles the per-document buffers of the featurizers that
	// share the cache (*scratch): allocated anew for each document they
	// made a document take about a sixth longer, most of it in the
	// garbage collector.
	scratch sync.Pool
}

// scratch is what featurizing one document needs and returns nothing of.
type scratch struct {
	words    []Span
	features []feature
	passage  []feature          // one passage's features
	memo     map[string]feature // cleared after each document: its keys point into it
	key      []byte
}

// getScratch returns a scratch from c, or a new one (c may be nil).
func (c *TermCache) getScratch() *scratch {
	if c != nil {
		if sc, ok := c.scratch.Get().(*scratch); ok {
			return sc
		}
	}
	return &scratch{}
}

// putScratch gives sc back to c for the next document (c may be nil).
func (c *TermCache) putScratch(sc *scratch) {
	if c == nil {
		return
	}
	clear(sc.memo)
	c.scratch.Put(sc)
}

// termHash is a word form's term hash; ok is false for a word with no
// term (a stop word, one code point).
type termHash struct {
	h  int32
	ok bool
}

// shortKey is a word of up to 15 bytes: its length, then its bytes.
type shortKey [16]byte

// toShortKey returns word's shortKey, or false when it is too long.
func toShortKey(word string) (k shortKey, ok bool) {
	if len(word) >= len(k) {
		return k, false
	}
	k[0] = byte(len(word))
	copy(k[1:], word)
	return k, true
}

// NewTermCache returns a cache of up to limit word forms (a few hundred
// thousand cover a language's working vocabulary; each costs about 32
// bytes, and a word past 15 bytes its length more). Once full it stops adding: no eviction, so no word's
// lookup cost depends on the order of documents.
func NewTermCache(limit int) *TermCache {
	return &TermCache{short: make(map[shortKey]termHash), long: make(map[string]termHash), limit: limit}
}

func (c *TermCache) get(word string) (t termHash, ok bool) {
	k, short := toShortKey(word)
	c.mu.RLock()
	if short {
		t, ok = c.short[k]
	} else {
		t, ok = c.long[word]
	}
	c.mu.RUnlock()
	return t, ok
}

func (c *TermCache) put(word string, t termHash) {
	k, short := toShortKey(word)
	c.mu.Lock()
	switch {
	case len(c.short)+len(c.long) >= c.limit:
	case short:
		c.short[k] = t
	default:
		c.long[strings.Clone(word)] = t
	}
	c.mu.Unlock()
}

// Len returns the number of word forms held.
func (c *TermCache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.short) + len(c.long)
}

// termOf returns the term hash of key (a termKey), through the cache
// when there is one.
func (f Featurizer) termOf(key string) termHash {
	if f.Terms != nil {
		if t, ok := f.Terms.get(key); ok {
			return t
		}
	}
	var t termHash
	if term := Term(key); term != "" {
		t = termHash{h: int32(murmur3.StringSum32(term)), ok: true}
	}
	if f.Terms != nil {
		f.Terms.put(key, t)
	}
	return t
}

// termKey returns the form word's term is remembered under, per document
// and in a TermCache: an ASCII word lower-cased (Term lower-cases first,
// so "Cats" and "cats" are stemmed once), any other word as it is. Most
// words are lower-case ASCII already and are their own key; for an ASCII
// word with capitals, lowered is true and the key is written into *buf
// instead, so that looking it up (m[string(*buf)]) allocates nothing.
func termKey(word string, buf *[]byte) (key string, lowered bool) {
	upper := false
	for i := 0; i < len(word); i++ {
		c := word[i]
		if c >= utf8.RuneSelf {
			return word, false
		}
		upper = upper || 'A' <= c && c <= 'Z'
	}
	if !upper {
		return word, false
	}
	b := append((*buf)[:0], word...)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	*buf = b
	return "", true
}

// DefaultFeaturizer returns the service's featurizer, its settings filled
// in: DefaultSegmenter's passages, DefaultDim features, Log term weights,
// no L2 (the model's IDF weighting normalises).
func DefaultFeaturizer() Featurizer {
	f, err := Featurizer{}.Normalized()
	if err != nil {
		panic(err) // the zero value's defaults are valid: TestDefaultFeaturizer
	}
	return f
}

// Normalized returns f with its defaults filled in, or an error.
func (f Featurizer) Normalized() (Featurizer, error) {
	s, err := f.Segmentation.Normalized()
	if err != nil {
		return f, err
	}
	f.Segmentation = s
	if f.Dim == 0 {
		f.Dim = DefaultDim
	}
	if f.Dim < 1 || f.Dim > math.MaxInt32 {
		return f, fmt.Errorf("%w: dim %d outside [1, 2^31)", ErrFeaturizer, f.Dim)
	}
	switch f.TF {
	case "":
		f.TF = Log
	case Raw, Log:
	default:
		return f, fmt.Errorf("%w: tf %q (want %s or %s)", ErrFeaturizer, f.TF, Raw, Log)
	}
	return f, nil
}

// Params returns f's settings as the key=value pairs of its identity.
func (f Featurizer) Params() map[string]string {
	p := map[string]string{
		"segmenter": string(f.Segmenter), "dim": strconv.Itoa(f.Dim), "tf": string(f.TF),
		"l2": strconv.FormatBool(f.L2), "stop": "snowball-english", "stem": "snowball-english",
		"hash": "murmur3-32-signed",
	}
	if f.Segmenter != Sentences {
		p["window"], p["stride"] = strconv.Itoa(f.Window), strconv.Itoa(f.Stride)
	}
	if f.Segmenter == Paragraphs {
		p["max_words"] = strconv.Itoa(f.MaxWords)
	}
	return p
}

// Identity is the featurizer's name, version and settings, as bags and
// models record them: two bags with equal identities were featurized
// alike. f must be Normalized.
func (f Featurizer) Identity() media.Featurizer {
	return media.Featurizer{Name: FeaturizerName, Version: FeaturizerVersion, Params: f.Params()}
}

// Document is a featurized document: its passages and, at the same index,
// their vectors (of dimension Featurizer.Dim).
type Document struct {
	Passages  []Span
	Instances []mil.SparseVec
}

// Regions returns each passage's span as the bags carry it.
func (d Document) Regions() []media.Region {
	out := make([]media.Region, len(d.Passages))
	for i, p := range d.Passages {
		out[i] = p.Region()
	}
	return out
}

// Term returns the term a word contributes (lower-cased, in Unicode
// normal form C, stemmed), or "" when it contributes none (one code point,
// or a stop word).
func Term(word string) string {
	w := strings.ToLower(word)
	if !isASCII(w) {
		// "café" typed with a combining accent is the same term as with
		// the precomposed letter.
		w = norm.NFC.String(w)
	}
	if runeCount(w) < 2 || english.IsStopWord(w) {
		return ""
	}
	return english.Stem(w, true)
}

// Hash returns the feature and sign of a term in dimension dim, as
// scikit-learn's HashingVectorizer(alternate_sign=True) computes them.
func Hash(term string, dim int) (idx int32, sign float64) {
	return hashIndex(int32(murmur3.StringSum32(term)), dim)
}

// hashIndex is Hash for a term's hash h.
func hashIndex(h int32, dim int) (idx int32, sign float64) {
	switch {
	case h == math.MinInt32:
		// |h| overflows; scikit-learn's documented replacement.
		idx = int32((math.MaxInt32 - (dim - 1)) % dim)
	case h < 0:
		idx = int32(int(-h) % dim)
	default:
		idx = int32(int(h) % dim)
	}
	if h < 0 {
		return idx, -1
	}
	return idx, 1
}

// feature is a word's hashed feature and sign in one uint32: the index
// shifted left by one, plus one when the sign is negative (indices are
// below 2^31). Sorting features brings each index's signs together;
// noFeature marks a word with no term.
type feature uint32

const noFeature feature = math.MaxUint32

// packFeature packs the feature of a term's hash h in dimension dim.
func packFeature(h int32, dim int) feature {
	idx, sign := hashIndex(h, dim)
	ft := feature(idx) << 1
	if sign < 0 {
		ft |= 1
	}
	return ft
}

// Featurize splits doc into passages and computes their vectors. An
// invalid document yields an error wrapping ErrInvalidUTF8; a passage with
// no term gets an empty vector (it is still an instance, with its span).
func (f Featurizer) Featurize(doc string) (Document, error) {
	f, err := f.Normalized()
	if err != nil {
		return Document{}, err
	}
	if err := CheckUTF8(doc); err != nil {
		return Document{}, err
	}
	sc := f.Terms.getScratch()
	defer f.Terms.putScratch(sc)
	sc.words = words(doc, 0, 0, sc.words[:0])
	return f.featurize(sc, doc, f.segment(doc, sc.words)), nil
}

// FeaturizeSpans computes the vectors of passages given by code-point
// spans (the ground-truth passages of an evaluation, or a sender's own),
// in f's term weighting; f's segmenter is not used. The spans get their
// byte offsets; a span outside doc is an error.
func (f Featurizer) FeaturizeSpans(doc string, cps []Span) (Document, error) {
	f, err := f.Normalized()
	if err != nil {
		return Document{}, err
	}
	if err := CheckUTF8(doc); err != nil {
		return Document{}, err
	}
	// The byte offset of every code point, and of the end.
	at := make([]int, 0, len(doc)+1)
	for b := range doc {
		at = append(at, b)
	}
	at = append(at, len(doc))
	spans := make([]Span, len(cps))
	for i, sp := range cps {
		if sp.Start < 0 || sp.End < sp.Start || sp.End >= len(at) {
			return Document{}, fmt.Errorf("%w: span [%d, %d) outside the %d code points", ErrSegmenter, sp.Start, sp.End, len(at)-1)
		}
		spans[i] = Span{Start: sp.Start, End: sp.End, ByteStart: at[sp.Start], ByteEnd: at[sp.End]}
	}
	sc := f.Terms.getScratch()
	defer f.Terms.putScratch(sc)
	sc.words = words(doc, 0, 0, sc.words[:0])
	return f.featurize(sc, doc, spans), nil
}

// featurize computes the vectors of spans of doc from the spans of its
// words, sc.words.
func (f Featurizer) featurize(sc *scratch, doc string, spans []Span) Document {
	// Each word is stemmed and hashed once, however many windows hold it,
	// and each distinct termKey once per document.
	ws := sc.words
	fs := slices.Grow(sc.features[:0], len(ws))[:len(ws)]
	sc.features = fs
	if sc.memo == nil {
		sc.memo = make(map[string]feature, len(ws)/2)
	}
	memo := sc.memo
	for i, w := range ws {
		key, lowered := termKey(w.Of(doc), &sc.key)
		var ft feature
		var ok bool
		if lowered {
			ft, ok = memo[string(sc.key)]
		} else {
			ft, ok = memo[key]
		}
		if !ok {
			if lowered {
				key = string(sc.key) // kept by the memo (and the cache)
			}
			ft = f.featureOf(key)
			memo[key] = ft
		}
		fs[i] = ft
	}
	out := Document{Passages: spans, Instances: make([]mil.SparseVec, len(spans))}
	for p, sp := range spans {
		lo := sort.Search(len(ws), func(i int) bool { return ws[i].ByteStart >= sp.ByteStart })
		pf := sc.passage[:0]
		for i := lo; i < len(ws) && ws[i].ByteEnd <= sp.ByteEnd; i++ {
			if fs[i] != noFeature {
				pf = append(pf, fs[i])
			}
		}
		sc.passage = pf
		slices.Sort(pf)
		n := distinctIndices(pf)
		if n == 0 {
			continue
		}
		idx, val := make([]int32, n), make([]float64, n)
		if n = f.weigh(pf, idx, val); n > 0 { // 0: every index's signs cancelled
			v := mil.SparseVec{Idx: idx[:n], Val: val[:n]}
			if f.L2 {
				normalize(v)
			}
			out.Instances[p] = v
		}
	}
	return out
}

// distinctIndices returns the number of distinct indices in the sorted
// fs: the most entries its vector can have.
func distinctIndices(fs []feature) int {
	n := 0
	for i := range fs {
		if i == 0 || fs[i]>>1 != fs[i-1]>>1 {
			n++
		}
	}
	return n
}

// featureOf returns the feature of key, a termKey.
func (f Featurizer) featureOf(key string) feature {
	if isASCII(key) && (len(key) < 2 || english.IsStopWord(key)) {
		// No term, as Term finds, and known without asking the cache:
		// a stop word is among the first words of nearly every document.
		return noFeature
	}
	if t := f.termOf(key); t.ok {
		return packFeature(t.h, f.Dim)
	}
	return noFeature
}

// weigh sums the signs of each index of the sorted fs (one passage's
// features) and writes the indices whose sum is not zero, and their
// weights, to idx and val, which have room for distinctIndices(fs); it
// returns how many it wrote.
func (f Featurizer) weigh(fs []feature, idx []int32, val []float64) int {
	n := 0
	for i := 0; i < len(fs); {
		// The index's positive signs sort before its negative ones.
		j, neg := i, 0
		for ; j < len(fs) && fs[j]>>1 == fs[i]>>1; j++ {
			neg += int(fs[j] & 1)
		}
		if s := float64(j - i - 2*neg); s != 0 {
			if f.TF == Log {
				s = math.Copysign(1+math.Log(math.Abs(s)), s)
			}
			idx[n], val[n] = int32(fs[i]>>1), s
			n++
		}
		i = j
	}
	return n
}

// normalize scales v to unit L2 norm (a zero vector stays zero).
func normalize(v mil.SparseVec) {
	n := math.Sqrt(v.SqNorm())
	if n == 0 {
		return
	}
	for k := range v.Val {
		v.Val[k] /= n
	}
}

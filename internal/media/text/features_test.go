package text

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/murmur3"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/mil"
)

// sklearnHash holds sklearn.utils.murmurhash3_32(term, seed=0) (signed),
// printed by scikit-learn 1.x: the reference Hash must agree with, bit
// for bit, for HashingVectorizer's features to be ours.
var sklearnHash = []struct {
	term string
	h    int32
}{
	{"foo", -156908512},
	{"cat", 1751422759},
	{"run", -243905464},
	{"ran", 567658162},
	{"runner", 946033505},
	{"naïv", 756638508},
	{"café", 605818632},
	{"日", 1411444746},
	{"the", -1132748958},
}

func TestHashMatchesScikitLearn(t *testing.T) {
	for _, c := range sklearnHash {
		if h := int32(murmur3.StringSum32(c.term)); h != c.h {
			t.Fatalf("murmur3(%q) = %d, scikit-learn %d", c.term, h, c.h)
		}
		// HashingVectorizer: index |h| mod n_features, sign of h.
		idx, sign := Hash(c.term, 16)
		wantIdx := int32(int(math.Abs(float64(c.h))) % 16)
		wantSign := 1.0
		if c.h < 0 {
			wantSign = -1
		}
		if idx != wantIdx || sign != wantSign {
			t.Fatalf("Hash(%q, 16) = %d, %v; want %d, %v", c.term, idx, sign, wantIdx, wantSign)
		}
	}
}

func TestTerm(t *testing.T) {
	for word, want := range map[string]string{
		"The": "", "a": "", "x": "", "Ourselves": "", // stop words, one code point
		"Cats": "cat", "running": "run", "generously": "generous", "runner": "runner",
		"Naïve": "naïv", "CAFÉ": "café", "cafe\u0301": "café", // combining accent: NFC
		"3.14": "3.14", "日本": "日本",
	} {
		if got := Term(word); got != want {
			t.Errorf("Term(%q) = %q, want %q", word, got, want)
		}
	}
}

// TestFeaturizeHandComputed checks the vectors of a small corpus against
// vectors worked out by hand from sklearnHash, in dimension 16:
//
//	cat    h > 0, 1751422759 mod 16 = 7   -> +1 at 7
//	run    h < 0,  243905464 mod 16 = 8   -> -1 at 8
//	ran    h > 0,  567658162 mod 16 = 2   -> +1 at 2
//	runner h > 0,  946033505 mod 16 = 1   -> +1 at 1
//	café   h > 0,  605818632 mod 16 = 8   -> +1 at 8 (collides with run)
//	naïv   h > 0,  756638508 mod 16 = 12  -> +1 at 12
func TestFeaturizeHandComputed(t *testing.T) {
	corpus := []struct {
		doc  string
		f    Featurizer
		want []mil.SparseVec
	}{
		{
			// "The" and "A" are stop words; cats, run, Cats, ran; then
			// runner, runs.
			doc: "The cats run. Cats ran!\n\nA runner runs",
			f:   Featurizer{Segmentation: Segmentation{Segmenter: Paragraphs}, Dim: 16, TF: Raw},
			want: []mil.SparseVec{
				{Idx: []int32{2, 7, 8}, Val: []float64{1, 2, -1}},
				{Idx: []int32{1, 8}, Val: []float64{1, -1}},
			},
		},
		{
			// run (-1) and café (+1) cancel at 8: signed hashing.
			// cafe + U+0301 is café after NFC.
			doc: "Run, cafe\u0301! Naïve cats.",
			f:   Featurizer{Segmentation: Segmentation{Segmenter: Sentences}, Dim: 16, TF: Raw},
			want: []mil.SparseVec{
				{},
				{Idx: []int32{7, 12}, Val: []float64{1, 1}},
			},
		},
		{
			// Log weights: cat and run three times each -> ±(1+ln 3).
			doc: "cats cat Cats run runs running",
			f:   Featurizer{Segmentation: Segmentation{Segmenter: Paragraphs}, Dim: 16, TF: Log},
			want: []mil.SparseVec{
				{Idx: []int32{7, 8}, Val: []float64{1 + math.Log(3), -(1 + math.Log(3))}},
			},
		},
		{
			// Windows of 2 words every 1 over cat cat the run (the stop
			// word counts as a word of a window, not as a term), each
			// L2-normalised: (2)/2, (1)/1, (-1)/1.
			doc: "cat cat the run",
			f:   Featurizer{Segmentation: Segmentation{Segmenter: Windows, Window: 2, Stride: 1}, Dim: 16, TF: Raw, L2: true},
			want: []mil.SparseVec{
				{Idx: []int32{7}, Val: []float64{1}},
				{Idx: []int32{7}, Val: []float64{1}},
				{Idx: []int32{8}, Val: []float64{-1}},
			},
		},
		{
			// L2: (2, -1) / sqrt(5).
			doc: "cats cats run",
			f:   Featurizer{Segmentation: Segmentation{Segmenter: Windows}, Dim: 16, TF: Raw, L2: true},
			want: []mil.SparseVec{
				{Idx: []int32{7, 8}, Val: []float64{2 / math.Sqrt(5), -1 / math.Sqrt(5)}},
			},
		},
	}
	for i, c := range corpus {
		d, err := c.f.Featurize(c.doc)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Instances) != len(c.want) || len(d.Passages) != len(c.want) {
			t.Fatalf("doc %d: %d instances, %d passages, want %d", i, len(d.Instances), len(d.Passages), len(c.want))
		}
		for p, v := range d.Instances {
			w := c.want[p]
			if len(v.Idx) != len(w.Idx) || (len(w.Idx) > 0 && !reflect.DeepEqual(v.Idx, w.Idx)) {
				t.Fatalf("doc %d passage %d %q: %+v, want %+v", i, p, d.Passages[p].Of(c.doc), v, w)
			}
			for k := range v.Val {
				if math.Abs(v.Val[k]-w.Val[k]) > 1e-12 {
					t.Fatalf("doc %d passage %d: %+v, want %+v", i, p, v, w)
				}
			}
			if err := v.Validate(16); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestDefaultFeaturizer: the service's featurizer is the zero value's,
// normalized: paragraphs, 2^17 features, log weights.
func TestDefaultFeaturizer(t *testing.T) {
	f := DefaultFeaturizer()
	if f.Segmenter != Paragraphs || f.MaxWords != DefaultMaxWords || f.Window != DefaultWindow || f.Dim != DefaultDim || f.TF != Log || f.L2 {
		t.Fatalf("default featurizer %+v", f)
	}
}

func TestIdentity(t *testing.T) {
	a, _ := Featurizer{}.Normalized()
	want := "text-hash@1?dim=131072&hash=murmur3-32-signed&l2=false&max_words=400&segmenter=paragraphs&stem=snowball-english&stop=snowball-english&stride=25&tf=log&window=50"
	if got := a.Identity().String(); got != want {
		t.Fatalf("identity %q, want %q", got, want)
	}
	b, _ := Featurizer{Dim: 1 << 10}.Normalized()
	if a.Identity().Equal(b.Identity()) {
		t.Fatal("different dimensions, same identity")
	}
	// What a bag carries (its featurizer as JSON) is what the model's
	// check compares: the same settings pass, any other is refused.
	raw, err := json.Marshal(a.Identity())
	if err != nil {
		t.Fatal(err)
	}
	var carried media.Featurizer
	if err := json.Unmarshal(raw, &carried); err != nil {
		t.Fatal(err)
	}
	if err := media.Check(a.Identity(), carried); err != nil {
		t.Fatalf("same featurizer refused: %v", err)
	}
	for _, other := range []Featurizer{{Dim: 1 << 10}, {TF: Raw}, {Segmentation: Segmentation{Segmenter: Windows}}, {Segmentation: Segmentation{Window: 40}}, {Segmentation: Segmentation{MaxWords: 300}}} {
		o, _ := other.Normalized()
		if err := media.Check(a.Identity(), o.Identity()); !errors.Is(err, media.ErrFeaturizer) {
			t.Fatalf("%+v: %v, want media.ErrFeaturizer", other, err)
		}
	}
	for _, f := range []Featurizer{{Dim: -1}, {TF: "sqrt"}} {
		if _, err := f.Featurize("a b"); err == nil || !strings.Contains(err.Error(), "bad text featurizer") {
			t.Fatalf("%+v: %v", f, err)
		}
	}
}

// TestTermCacheSameVectors: a shared term cache, filled by goroutines
// featurizing at once, changes no vector, and stops at its bound.
func TestTermCacheSameVectors(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	docs := make([]string, 200)
	for i := range docs {
		docs[i] = randomDoc(r) + " Running runners ran; the cats' CAFÉS"
	}
	plain := Featurizer{Segmentation: Segmentation{Segmenter: Windows, Window: 6, Stride: 3}, Dim: 64}
	cached := plain
	cached.Terms = NewTermCache(40)
	var wg sync.WaitGroup
	got := make([]Document, len(docs))
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(docs); i += 4 {
				d, err := cached.Featurize(docs[i])
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = d
			}
		})
	}
	wg.Wait()
	for i, doc := range docs {
		want, err := plain.Featurize(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("doc %d: cached %+v, plain %+v", i, got[i], want)
		}
	}
	if n := cached.Terms.Len(); n != 40 {
		t.Fatalf("cache holds %d word forms, want its bound 40", n)
	}
}

// TestFeaturizeSpans: given spans featurize as the segmenter's own do,
// and get their byte offsets.
func TestFeaturizeSpans(t *testing.T) {
	doc := "Ünïcödé cats ran.\n\nThé runner runs home"
	f := Featurizer{Segmentation: Segmentation{Segmenter: Paragraphs}, Dim: 64}
	want, err := f.Featurize(doc)
	if err != nil {
		t.Fatal(err)
	}
	cps := make([]Span, len(want.Passages))
	for i, p := range want.Passages {
		cps[i] = Span{Start: p.Start, End: p.End}
	}
	got, err := f.FeaturizeSpans(doc, cps)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("spans %+v, segmenter %+v", got, want)
	}
	if _, err := f.FeaturizeSpans(doc, []Span{{Start: 3, End: 40}}); err == nil {
		t.Fatal("a span past the 39 code points accepted")
	}
}

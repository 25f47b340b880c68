package text

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// paintRef is Paint by its definition, one code point at a time: among
// the spans holding k, the one whose centre (Start+End-1)/2 is nearest,
// the earliest on a tie.
func paintRef(n int, spans []Span, labels []int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = -1
		best := -1.0
		for s, sp := range spans {
			if k < sp.Start || k >= sp.End {
				continue
			}
			d := float64(k) - float64(sp.Start+sp.End-1)/2
			if d < 0 {
				d = -d
			}
			if best < 0 || d < best {
				out[k], best = labels[s], d
			}
		}
	}
	return out
}

func TestPaintMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 2000 {
		n := 1 + r.IntN(60)
		var spans []Span
		var labels []int
		for start := r.IntN(5); start < n; start += 1 + r.IntN(8) {
			end := min(n, start+1+r.IntN(20))
			spans = append(spans, Span{Start: start, End: end})
			labels = append(labels, r.IntN(4))
		}
		if got, want := Paint(n, spans, labels), paintRef(n, spans, labels); !reflect.DeepEqual(got, want) {
			t.Fatalf("spans %v labels %v: %v, want %v", spans, labels, got, want)
		}
	}
}

// TestHighlight: the page holds the document's text, escaped, each
// painted run in its class's colour with its name, and the legend.
func TestHighlight(t *testing.T) {
	doc := "Cars <& engines>.\n\nThe pitcher threw."
	spans := []Span{{Start: 0, End: 17, ByteStart: 0, ByteEnd: 17}, {Start: 19, End: 37, ByteStart: 19, ByteEnd: 37}}
	page := Highlight("doc 1", doc, spans, []int{0, 1}, []string{"autos", "baseball"})
	for _, want := range []string{
		"<title>doc 1</title>",
		`<span class="l" style="background:#ffd6a5" title="autos">Cars &lt;&amp; engines&gt;.</span>`,
		`<span class="l" style="background:#caffbf" title="baseball">The pitcher threw.</span>`,
		`<span style="background:#caffbf">baseball</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Fatalf("page lacks %q:\n%s", want, page)
		}
	}
}

package text

import (
	"fmt"
	"html"
	"math"
	"strings"
	"unicode/utf8"
)

// Paint returns the label of each of n code points: that of the covering
// span whose centre is nearest (the earlier on a tie), -1 where no span
// covers it. Overlapping passages (Andrews's windows overlap by half) are
// stitched so, as overlapping tiles usually are: each code point is
// labeled by the passage that saw the most context on both sides of it.
func Paint(n int, spans []Span, labels []int) []int {
	out := make([]int, n)
	dist := make([]int, n) // twice the distance to the painting span's centre
	for k := range out {
		out[k], dist[k] = -1, math.MaxInt
	}
	for s, sp := range spans {
		centre2 := sp.Start + sp.End - 1
		for k := max(sp.Start, 0); k < min(sp.End, n); k++ {
			d := 2*k - centre2
			if d < 0 {
				d = -d
			}
			if d < dist[k] {
				out[k], dist[k] = labels[s], d
			}
		}
	}
	return out
}

// palette holds the background colours of the first classes a page names
// (then the cycle repeats): light, distinct, and dark text stays legible.
var palette = []string{"#ffd6a5", "#caffbf", "#9bf6ff", "#bdb2ff", "#ffc6ff", "#fdffb6", "#a0c4ff", "#ffadad",
	"#d0f4de", "#e4c1f9", "#fcf6bd", "#a9def9"}

// Highlight renders doc as a self-contained HTML page: every code point on
// the background of the class Paint gives it (none: white), each run's
// class in its tooltip, a legend of the classes present, and the title.
// classes names the labels' indices.
func Highlight(title, doc string, spans []Span, labels []int, classes []string) string {
	painted := Paint(utf8.RuneCountInString(doc), spans, labels)
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html>\n<meta charset=\"utf-8\">\n<title>%s</title>\n", html.EscapeString(title))
	b.WriteString("<style>body{font:15px/1.5 sans-serif;max-width:60em;margin:2em auto}pre{white-space:pre-wrap;font:inherit}" +
		"span.l{border-radius:3px}.legend span{padding:0 .4em;margin-right:.5em;border-radius:3px}</style>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p class=\"legend\">", html.EscapeString(title))
	seen := map[int]bool{}
	for _, y := range labels {
		if y >= 0 && !seen[y] {
			seen[y] = true
			fmt.Fprintf(&b, "<span style=\"background:%s\">%s</span>", palette[y%len(palette)], html.EscapeString(className(classes, y)))
		}
	}
	b.WriteString("</p>\n<pre>")
	k, runStart, runLabel := 0, 0, -2
	flush := func(end int) {
		if end <= runStart {
			return
		}
		part := html.EscapeString(doc[runStart:end])
		if runLabel < 0 {
			b.WriteString(part)
			return
		}
		fmt.Fprintf(&b, "<span class=\"l\" style=\"background:%s\" title=\"%s\">%s</span>", palette[runLabel%len(palette)],
			html.EscapeString(className(classes, runLabel)), part)
	}
	for i := range doc {
		if painted[k] != runLabel {
			flush(i)
			runStart, runLabel = i, painted[k]
		}
		k++
	}
	flush(len(doc))
	b.WriteString("</pre>\n")
	return b.String()
}

func className(classes []string, y int) string {
	if y >= 0 && y < len(classes) {
		return classes[y]
	}
	return fmt.Sprintf("class %d", y)
}

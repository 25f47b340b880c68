package texteval

import (
	"context"
	"reflect"
	"testing"

	"github.com/mimlstream/mimlstream/internal/eval"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/mil"
)

// TestScore: two ground-truth passages of a made-up document scored by
// hand, through windows that straddle them; then as the ground-truth
// passages themselves (Options.GTPassages).
func TestScore(t *testing.T) {
	//                 0         1         2         3
	//                 0123456789012345678901234567890123456
	doc := "car car car car\n\nbat bat bat bat bat"
	es := []text.Entry{{ID: "d", Text: doc, Labels: []string{"autos", "baseball"}, Passages: []text.GTPassage{
		{Start: 0, End: 15, Label: "autos"}, {Start: 17, End: 36, Label: "baseball"}}}}
	f := text.Featurizer{Segmentation: text.Segmentation{Segmenter: text.Windows, Window: 4, Stride: 2}, Dim: 32}
	c, err := Build(context.Background(), es, Options{Featurizer: f, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Windows (words): [0,4) "car car car car" 0-15, [2,6) "car car\n\nbat bat"
	// 8-24, [4,8) "bat bat bat bat" 17-32, [6,9) 25-36.
	want := []text.Span{{Start: 0, End: 15}, {Start: 8, End: 24}, {Start: 17, End: 32}, {Start: 25, End: 36}}
	for i, sp := range c.Spans[0] {
		if sp.Start != want[i].Start || sp.End != want[i].End {
			t.Fatalf("spans %+v, want %+v", c.Spans[0], want)
		}
	}
	// The second window holds "car car" and "bat bat": six letters of
	// each, a tie, so its truth is the first reached, autos.
	if got := c.Data.Bags[0].InstanceLabels; !reflect.DeepEqual(got, []int{0, 0, 1, 1}) {
		t.Fatalf("passage truth %v", got)
	}
	// Centres (in code points): 7, 15.5, 24, 30. With the passages'
	// truths, the second window (autos) is the nearest to 17-19, "bat"'s
	// first letters: 3 of the 27 letters wrong, both passages right.
	s, err := c.Score(0, []int{0, 0, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	if s != (Counts{Passages: 2, PassagesRight: 2, Chars: 12 + 15, CharsRight: 24}) {
		t.Fatalf("majority truths: %+v", s)
	}
	// The second window says baseball: it paints 12-14 ("car"'s last
	// letters, nearer 15.5 than 7) wrong and 17-19 right; passage 0 keeps
	// its majority (9 of 12).
	s, _ = c.Score(0, []int{0, 1, 1, 1})
	if s != (Counts{Passages: 2, PassagesRight: 2, Chars: 27, CharsRight: 24}) {
		t.Fatalf("second window baseball: %+v", s)
	}
	// Everything baseball: passage 0 wrong, its 12 letters wrong.
	s, _ = c.Score(0, []int{1, 1, 1, 1})
	if s != (Counts{Passages: 2, PassagesRight: 1, Chars: 27, CharsRight: 15}) {
		t.Fatalf("all baseball: %+v", s)
	}
	m, err := c.InstanceScore([]*mil.Bag{&c.Data.Bags[0]}, []measure.Prediction{{InstanceLabels: []int{1, 1, 1, 1}}})
	if err != nil || m[measure.InstanceAccuracy] != 0.5 || m[eval.CharAccuracy] != 15.0/27 {
		t.Fatalf("InstanceScore %v, %v", m, err)
	}
	g, err := Build(context.Background(), es, Options{Featurizer: f, GTPassages: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g.Spans[0], []text.Span{{Start: 0, End: 15, ByteStart: 0, ByteEnd: 15}, {Start: 17, End: 36, ByteStart: 17, ByteEnd: 36}}) ||
		!reflect.DeepEqual(g.Data.Bags[0].InstanceLabels, []int{0, 1}) {
		t.Fatalf("ground-truth passages %+v, labels %v", g.Spans[0], g.Data.Bags[0].InstanceLabels)
	}
	if s, _ := g.Score(0, []int{0, 1}); s != (Counts{Passages: 2, PassagesRight: 2, Chars: 27, CharsRight: 27}) {
		t.Fatalf("ground-truth passages, right labels: %+v", s)
	}
}

// Package texteval scores the passage annotation of documents against
// ground-truth passages that the service's own passages need not match:
// every predicted passage paints its label on its code points, and each
// ground-truth passage takes the majority of its painted code points.
//
// Measures (white space is never scored; the "\n\n" separators of the dev
// set lie outside every ground-truth passage anyway):
//
//   - passage accuracy ("instance_accuracy"): the share of ground-truth
//     passages whose majority painted label is their label; a code point
//     no predicted passage covers votes "none", which is never right;
//   - character accuracy: the share of ground-truth passages' code points
//     painted with their passage's label.
//
// Overlapping passages (Andrews's windows overlap by half) paint each code
// point with the label of the covering passage whose centre is nearest
// (the earlier on a tie: text.Paint), the usual way of stitching
// overlapping tiles.
//
// The protocol is the project's: `retrainer eval --data docs.jsonl` builds
// a Corpus and hands its InstanceScore to eval.Run (eval.Config), so the
// folds, queries and fits are those of every other data set. The
// references are the MIML instance annotation papers': inherit+slr (every
// training passage takes each of its bag's labels, eval.Inherit) as the
// baseline, and slr on the passages' true labels (Data's InstanceLabels:
// the majority ground-truth label of each of the service's passages) as
// the upper bound.
package texteval

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/mimlstream/mimlstream/internal/eval"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/mil"
)

// Corpus is a featurized document set with its ground truth.
type Corpus struct {
	Entries []text.Entry
	// Data holds one sparse bag per entry, its instances the passages at
	// the same index of Spans; InstanceLabels are the passages' majority
	// ground-truth labels (for the supervised upper bound only).
	Data  *mil.Dataset
	Spans [][]text.Span
	// runes[i][k] is the code point k of entry i is white space.
	space [][]bool
	gt    [][]int // ground-truth label of each code point, -1 outside passages
	byID  map[string]int
}

// Options say how documents become bags.
type Options struct {
	// Featurizer makes the passages and their vectors.
	Featurizer text.Featurizer
	// GTPassages makes the ground-truth passages the instances, instead
	// of the featurizer's own passages: what a perfect segmenter would
	// give, the ceiling of the service's segmentation.
	GTPassages bool
	// Classes is the class vocabulary; nil takes the sorted union of the
	// entries' labels and passage labels.
	Classes []string
	// Workers featurize documents at once (<= 0: GOMAXPROCS).
	Workers int
}

// Load reads a document manifest (text.ReadManifestFile) and builds it.
func Load(ctx context.Context, path string, opt Options) (*Corpus, error) {
	es, err := text.ReadManifestFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Build(ctx, es, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.Data.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return c, nil
}

// Build featurizes the entries.
func Build(ctx context.Context, entries []text.Entry, opt Options) (*Corpus, error) {
	f, err := opt.Featurizer.Normalized()
	if err != nil {
		return nil, err
	}
	if f.Terms == nil {
		// A corpus's documents share most of their words: stem each
		// word form once for all of them, as ingest does (no vector
		// changes: text.TestFeaturizeMatchesReference).
		f.Terms = text.NewTermCache(1 << 20)
	}
	classes, workers := opt.Classes, opt.Workers
	if classes == nil {
		set := map[string]bool{}
		for _, e := range entries {
			for _, l := range e.Labels {
				set[l] = true
			}
			for _, p := range e.Passages {
				set[p.Label] = true
			}
		}
		for l := range set {
			classes = append(classes, l)
		}
		slices.Sort(classes)
	}
	index := make(map[string]int, len(classes))
	for i, c := range classes {
		index[c] = i
	}
	c := &Corpus{Entries: entries, Data: &mil.Dataset{Name: "documents", Classes: classes, Dim: f.Dim, Bags: make([]mil.Bag, len(entries))},
		Spans: make([][]text.Span, len(entries)), space: make([][]bool, len(entries)), gt: make([][]int, len(entries))}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, len(entries))
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				errs[i] = c.build(i, f, opt.GTPassages, index)
			}
		})
	}
	for i := range entries {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	c.byID = make(map[string]int, len(entries))
	for i, e := range entries {
		c.byID[e.ID] = i
	}
	return c, nil
}

func (c *Corpus) build(i int, f text.Featurizer, gtPassages bool, index map[string]int) error {
	e := c.Entries[i]
	var doc text.Document
	var err error
	if gtPassages {
		spans := make([]text.Span, len(e.Passages))
		for k, p := range e.Passages {
			spans[k] = text.Span{Start: p.Start, End: p.End}
		}
		doc, err = f.FeaturizeSpans(e.Text, spans)
	} else {
		doc, err = f.Featurize(e.Text)
	}
	if err != nil {
		return fmt.Errorf("document %q: %w", e.ID, err)
	}
	runes := []rune(e.Text)
	space := make([]bool, len(runes))
	for k, r := range runes {
		space[k] = unicode.IsSpace(r)
	}
	gt := make([]int, len(runes))
	for k := range gt {
		gt[k] = -1
	}
	for _, p := range e.Passages {
		y, ok := index[p.Label]
		if !ok {
			return fmt.Errorf("document %q: passage label %q not a class", e.ID, p.Label)
		}
		for k := p.Start; k < p.End; k++ {
			gt[k] = y
		}
	}
	b := mil.Bag{ID: e.ID, Sparse: doc.Instances}
	if e.Labels != nil {
		b.Labels = []int{}
		for _, l := range e.Labels {
			y, ok := index[l]
			if !ok {
				return fmt.Errorf("document %q: label %q not a class", e.ID, l)
			}
			b.Labels = append(b.Labels, y)
		}
		slices.Sort(b.Labels)
		b.Labels = slices.Compact(b.Labels)
	}
	if len(e.Passages) > 0 {
		b.InstanceLabels = make([]int, len(doc.Passages))
		for k, sp := range doc.Passages {
			b.InstanceLabels[k] = majority(gt[sp.Start:sp.End], space[sp.Start:sp.End])
		}
	}
	c.Data.Bags[i], c.Spans[i], c.space[i], c.gt[i] = b, doc.Passages, space, gt
	return nil
}

// majority returns the most frequent label >= 0 of the non-space code
// points (the first reached on a tie), or mil.Unlabeled when there is none.
func majority(labels []int, space []bool) int {
	counts := map[int]int{}
	best, bestN := mil.Unlabeled, 0
	for k, y := range labels {
		if space[k] || y < 0 {
			continue
		}
		counts[y]++
		if counts[y] > bestN {
			best, bestN = y, counts[y]
		}
	}
	return best
}

// Counts are the scored units of some documents.
type Counts struct {
	Passages, PassagesRight int
	Chars, CharsRight       int
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Passages += o.Passages
	c.PassagesRight += o.PassagesRight
	c.Chars += o.Chars
	c.CharsRight += o.CharsRight
}

// PassageAccuracy is the share of ground-truth passages right.
func (c Counts) PassageAccuracy() float64 { return float64(c.PassagesRight) / float64(c.Passages) }

// CharAccuracy is the share of their non-space code points right.
func (c Counts) CharAccuracy() float64 { return float64(c.CharsRight) / float64(c.Chars) }

// Score scores the predicted passage labels of entry i.
func (c *Corpus) Score(i int, labels []int) (Counts, error) {
	if len(labels) != len(c.Spans[i]) {
		return Counts{}, fmt.Errorf("document %q: %d labels for %d passages", c.Entries[i].ID, len(labels), len(c.Spans[i]))
	}
	painted := text.Paint(len(c.gt[i]), c.Spans[i], labels)
	var out Counts
	for _, p := range c.Entries[i].Passages {
		y := c.gt[i][p.Start]
		if majority(painted[p.Start:p.End], c.space[i][p.Start:p.End]) == y {
			out.PassagesRight++
		}
		out.Passages++
		for k := p.Start; k < p.End; k++ {
			if c.space[i][k] {
				continue
			}
			out.Chars++
			if painted[k] == y {
				out.CharsRight++
			}
		}
	}
	return out, nil
}

// InstanceScore scores the passage labels of test bags of c (by bag ID):
// instance_accuracy and char_accuracy over them, the form of
// eval.Config.InstanceScore.
func (c *Corpus) InstanceScore(test []*mil.Bag, preds []measure.Prediction) (map[string]float64, error) {
	var n Counts
	for j, b := range test {
		i, ok := c.byID[b.ID]
		if !ok {
			return nil, fmt.Errorf("bag %q is no document of the corpus", b.ID)
		}
		if preds[j].InstanceLabels == nil {
			return nil, fmt.Errorf("bag %q: the model labels no passage", b.ID)
		}
		s, err := c.Score(i, preds[j].InstanceLabels)
		if err != nil {
			return nil, err
		}
		n.Add(s)
	}
	if n.Passages == 0 {
		return nil, fmt.Errorf("the %d test documents have no ground-truth passage", len(test))
	}
	return map[string]float64{measure.InstanceAccuracy: n.PassageAccuracy(), eval.CharAccuracy: n.CharAccuracy()}, nil
}

//go:build unix

package text

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time: the benchmarks report
// documents per CPU second beside the wall-clock rate, since on a shared
// machine the wall clock counts other processes' turns too, and the peer
// (time.process_time) is timed the same way.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// devDocs reads the documents of the text development set: the file named
// by MIMLSTREAM_TEXT_DEV, or ../shared/data/media/text_dev/docs.jsonl
// beside the repository. A benchmark without them fails: it must not pass
// having measured nothing.
func devDocs(b *testing.B) []string {
	b.Helper()
	path := os.Getenv("MIMLSTREAM_TEXT_DEV")
	if path == "" {
		path = filepath.Join("..", "..", "..", "..", "shared", "data", "media", "text_dev", "docs.jsonl")
	}
	es, err := ReadManifestFile(path)
	if err != nil {
		b.Fatalf("the text development set (MIMLSTREAM_TEXT_DEV): %v", err)
	}
	docs := make([]string, len(es))
	for i, e := range es {
		docs[i] = e.Text
	}
	return docs
}

// BenchmarkDocuments measures documents per second (wall clock and CPU) on
// one goroutine over
// the development set's 1,000 documents (run with -cpu 1 for per core):
// words and passages only, then passages and their hashed vectors, per
// segmenter. docs/peers/text_hashing runs it beside scikit-learn's
// HashingVectorizer on the same documents.
func BenchmarkDocuments(b *testing.B) {
	docs := devDocs(b)
	bytes := 0
	for _, d := range docs {
		bytes += len(d)
	}
	for _, seg := range []Segmenter{Windows, Paragraphs, Sentences} {
		f := Featurizer{Segmentation: Segmentation{Segmenter: seg}}
		b.Run("passages/"+string(seg), func(b *testing.B) {
			b.SetBytes(int64(bytes))
			cpu0 := cpuTime(b)
			for b.Loop() {
				for _, d := range docs {
					if _, err := f.Segment(d, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*len(docs))/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric(float64(b.N*len(docs))/(cpuTime(b)-cpu0).Seconds(), "docs/cpu-s")
		})
		for _, cached := range []bool{false, true} {
			name := "features/" + string(seg)
			g := f
			if cached {
				// The stream's steady state: one cache for every
				// document, warmed by the first pass.
				name += "/term-cache"
				g.Terms = NewTermCache(1 << 20)
			}
			b.Run(name, func(b *testing.B) {
				featurize(b, g, docs, bytes)
			})
		}
	}
}

// featurize times f on docs; a term cache is warmed by one pass first,
// outside the timing (b.Loop starts the clock at its first call).
func featurize(b *testing.B, f Featurizer, docs []string, bytes int) {
	if f.Terms != nil {
		for _, d := range docs {
			if _, err := f.Featurize(d); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.SetBytes(int64(bytes))
	cpu0 := cpuTime(b)
	for b.Loop() {
		for _, d := range docs {
			if _, err := f.Featurize(d); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(docs))/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric(float64(b.N*len(docs))/(cpuTime(b)-cpu0).Seconds(), "docs/cpu-s")
}

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
// one goroutine over the development set's 1,000 documents (run with -cpu
// 1 for per core): words and passages only, then passages and their hashed
// vectors, per segmenter, in three states of the term cache:
//
//   - no-cache: no TermCache at all, every word form stemmed in every
//     document that holds it (a one-off caller of Featurize);
//   - empty-cache: a new, empty TermCache for each pass over the 1,000
//     documents, created and filled inside the timing: an ingest process
//     that has just started, featurizing its first 1,000 documents, the
//     fair counterpart of a peer that starts from nothing;
//   - warm-cache: one cache for every pass, filled by a pass before the
//     timing (the stream's steady state).
//
// docs/peers/text_hashing runs it beside scikit-learn's HashingVectorizer
// on the same documents.
func BenchmarkDocuments(b *testing.B) {
	docs := devDocs(b)
	bytes := 0
	for _, d := range docs {
		bytes += len(d)
	}
	for _, seg := range []Segmenter{Windows, Paragraphs, Sentences} {
		f := Featurizer{Segmentation: Segmentation{Segmenter: seg}}
		// What is timed must be right: every document's Document, with
		// and without a term cache, equals the reference's.
		cache := NewTermCache(termCacheLimit)
		for _, d := range docs {
			checkAgainstReference(b, f, cache, d)
		}
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
			reportRates(b, len(docs), cpu0)
		})
		for _, c := range []cacheState{noCache, emptyCache, warmCache} {
			b.Run("features/"+string(seg)+"/"+string(c), func(b *testing.B) {
				featurize(b, f, c, docs, bytes)
			})
		}
	}
}

// cacheState is the term cache a benchmark featurizes with (see
// BenchmarkDocuments).
type cacheState string

const (
	noCache    cacheState = "no-cache"
	emptyCache cacheState = "empty-cache"
	warmCache  cacheState = "warm-cache"
)

// termCacheLimit is the bound ingest gives its cache.
const termCacheLimit = 1 << 20

// featurize times f on docs with the term cache in state c.
func featurize(b *testing.B, f Featurizer, c cacheState, docs []string, bytes int) {
	pass := func(f Featurizer) {
		for _, d := range docs {
			if _, err := f.Featurize(d); err != nil {
				b.Fatal(err)
			}
		}
	}
	if c == warmCache {
		// Filled outside the timing: b.Loop starts the clock at its
		// first call.
		f.Terms = NewTermCache(termCacheLimit)
		pass(f)
	}
	b.SetBytes(int64(bytes))
	cpu0 := cpuTime(b)
	for b.Loop() {
		if c == emptyCache {
			f.Terms = NewTermCache(termCacheLimit)
		}
		pass(f)
	}
	reportRates(b, len(docs), cpu0)
}

// reportRates reports documents per second of wall clock and of CPU time
// since cpu0, for n documents per iteration.
func reportRates(b *testing.B, n int, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric(float64(b.N*n)/(cpuTime(b)-cpu0).Seconds(), "docs/cpu-s")
}

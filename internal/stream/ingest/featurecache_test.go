package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestMediaSentTwiceFeaturizedOnceByTheCommand: `ingest --data` with
// --feature-cache-redis, run twice on a photo and twice on a document
// (each under another id the second time), featurizes each once. Between
// the runs the test marks the cached features (the first instance's first
// value); the second run's bag carries the mark, so it came from the
// cache, not from featurizing again, and the cache holds one entry per
// medium. Real Redis (fails under CI=true without it). Catches the flag
// not wired to the publisher, a door that bypasses the cache, and a key
// that differs between two sendings of the same bytes.
func TestMediaSentTwiceFeaturizedOnceByTheCommand(t *testing.T) {
	rdb, addr, prefix := realRedis(t, "ingest-cache")
	cache := featurecache.New(rdb, prefix, time.Hour, 100)
	brokers, topics := startCluster(t)
	dir := t.TempDir()
	img, err := os.ReadFile("../../../testdata/msrc_v2_sample/images/12_29_s.jpg")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.jpg"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "The shuttle's launch was delayed: engineers found a crack in a fuel line. Cafés nearby stayed open."
	pf, err := imagefeat.New(imagefeat.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	const mark = 12345.5
	ctx := context.Background()
	for k, c := range []struct {
		name string
		line func(id string) any
		f    media.Featurizer
		sha  string
		mark func(e *featurecache.Featurized)
		got  func(m *wire.BagMessage) float64
	}{
		{"photo", func(id string) any { return map[string]any{"id": id, "image": "p.jpg", "labels": []string{"a"}} },
			pf.Identity(), media.Identify(img, "", "").SHA256,
			func(e *featurecache.Featurized) { e.Instances[0][0] = mark },
			func(m *wire.BagMessage) float64 { return m.Instances[0][0] }},
		{"document", func(id string) any { return map[string]any{"id": id, "text": doc, "labels": []string{"a"}} },
			defaultTextFeaturizer().Identity(), media.Identify([]byte(doc), "", "").SHA256,
			func(e *featurecache.Featurized) { e.Sparse[0].Val[0] = mark },
			func(m *wire.BagMessage) float64 { return m.SparseInstances[0].Val[0] }},
	} {
		v, _ := wire.NewValidator(0)
		var bags []*wire.BagMessage
		for run, id := range []string{c.name + "-first", c.name + "-again"} {
			line, _ := json.Marshal(c.line(id))
			manifest := filepath.Join(dir, c.name+".jsonl")
			if err := os.WriteFile(manifest, append(line, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			args := []string{"--brokers", strings.Join(brokers, ","), "--data", manifest, "--progress=false",
				"--feature-cache-redis", addr, "--cache-prefix", prefix}
			if err := Command(ctx, service.Env{Stdout: &stdout, Stderr: &stderr}, args); err != nil {
				t.Fatalf("%s run %d: %v\n%s", c.name, run, err, stderr.String())
			}
			e, ok, err := featurecache.GetMedia(ctx, cache, c.f, c.sha)
			if err != nil || !ok {
				t.Fatalf("%s run %d: not in the cache under its featurizer and hash: %v %v", c.name, run, ok, err)
			}
			if run == 0 {
				c.mark(&e)
				if err := featurecache.PutMedia(ctx, cache, c.f, c.sha, e); err != nil {
					t.Fatal(err)
				}
			}
		}
		raws := readTopic(t, brokers, topics.Annotate, 2*k+2)
		for _, raw := range raws[2*k : 2*k+2] {
			m, err := v.DecodeBag(raw)
			if err != nil {
				t.Fatal(err)
			}
			bags = append(bags, m)
		}
		first, again := bags[0], bags[1]
		if first.ID != c.name+"-first" || again.ID != c.name+"-again" {
			t.Fatalf("%s: bags %s, %s", c.name, first.ID, again.ID)
		}
		if c.got(first) == mark || c.got(again) != mark {
			t.Errorf("%s: first value %v then %v; want the second from the marked cache entry (%v): featurized again", c.name, c.got(first), c.got(again), mark)
		}
		if again.Media.SHA256 != c.sha || again.Featurizer == nil || !again.Featurizer.Equal(c.f) || len(again.Regions) != len(first.Regions) {
			t.Errorf("%s: the cached bag's provenance %+v %+v", c.name, again.Media, again.Featurizer)
		}
	}
	keys, err := rdb.Keys(ctx, "{"+prefix+"}:e:media:*").Result()
	if err != nil || len(keys) != 2 {
		t.Errorf("media entries in the cache: %v %v, want one photo and one document", keys, err)
	}
}

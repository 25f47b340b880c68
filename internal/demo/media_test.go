package demo

import (
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/stream/sample"
)

const msrcSample = "testdata/msrc_v2_sample" // taken from the repository's root

// TestMediaSummary runs the media demo on the three sample photos of
// testdata/msrc_v2_sample, streamed ten times, and holds its summary to
// what the photos are: every photo ingested and annotated once, the
// labeled ones exactly those the ingest's label-fraction choice keeps
// (recomputed here from the ids), as many regions as the service's
// segmentation cuts the photos into (recomputed here with photobag), the
// region accuracy per mode over the photos of that mode and a fraction,
// every photo counted under a version the retrainer made, and one
// picture per photo written where the summary says, each a PNG of the
// photo's size with its legend.
func TestMediaSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline in process; skipped with -short")
	}
	const rounds = 10
	lines, dir, err := photobag.ReadManifest(filepath.Join("../..", msrcSample, "bags.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	classes, err := photobag.Classes(dir, lines)
	if err != nil {
		t.Fatal(err)
	}
	f, err := imagefeat.New(imagefeat.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	labeled, regions := 0, 0
	for _, l := range lines {
		data, err := os.ReadFile(filepath.Join(dir, l.Image))
		if err != nil {
			t.Fatal(err)
		}
		m, err := photobag.Bag(photobag.Photo{ID: l.ID, URI: l.Image, Data: data}, f, classes, photo.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		regions += rounds * len(m.Regions)
		for r := range rounds {
			id := l.ID
			if r > 0 {
				id = fmt.Sprintf("r%d/%s", r+1, l.ID)
			}
			if sample.Unit("1", id) < 0.5 {
				labeled++
			}
		}
	}
	photos := rounds * len(lines)

	pictures := t.TempDir()
	summary := runSummary(t, []string{"--media", "--media-data", msrcSample, "--rounds", strconv.Itoa(rounds), "--min-bags", "8", "--every", "8",
		"--model", "orlr", "--pictures", pictures, "--timeout", "2m"})
	ints := func(re string) []int { t.Helper(); return summaryInts(t, summary, re) }
	if got := ints(`ingested +(\d+) photos \((\d+) labeled`); got[0] != photos || got[1] != labeled {
		t.Errorf("ingested %d photos, %d labeled; want %d, %d", got[0], got[1], photos, labeled)
	}
	if ann := ints(`annotated +(\d+) distinct photos, (\d+) regions .*, (\d+) dead letters`); ann[0] != photos || ann[1] != regions || ann[2] != 0 {
		t.Errorf("annotated %d photos, %d regions, %d dead letters; want %d, %d, none", ann[0], ann[1], ann[2], photos, regions)
	}
	modes := map[string]int{}
	for _, m := range regexp.MustCompile(`region accuracy (\S+) +([0-9.]+), pixel accuracy ([0-9.]+), over (\d+) photos`).FindAllStringSubmatch(summary, -1) {
		for _, v := range m[2:4] {
			if a, err := strconv.ParseFloat(v, 64); err != nil || a < 0 || a > 1 {
				t.Errorf("%s accuracy %q is not a fraction", m[1], v)
			}
		}
		modes[m[1]], _ = strconv.Atoi(m[4])
	}
	if modes["inductive"] != photos-labeled || modes["transductive"] != labeled {
		t.Errorf("region accuracy over %v photos; want inductive %d (unlabeled), transductive %d (labeled)", modes, photos-labeled, labeled)
	}
	made := map[string]bool{}
	for _, r := range regexp.MustCompile(`(?m)^  refit (v\d+) `).FindAllStringSubmatch(summary, -1) {
		made[r[1]] = true
	}
	if byVersion := perVersion(t, summary, "photos", made); byVersion != photos {
		t.Errorf("photos per model version sum to %d, want %d", byVersion, photos)
	}

	written := regexp.MustCompile(`(?m)^  (\S+\.png)  \(orlr v\d+, (inductive|transductive)\)$`).FindAllStringSubmatch(summary, -1)
	if len(written) != len(lines) || !strings.Contains(summary, "annotated pictures in "+pictures) {
		t.Fatalf("%d pictures listed, want one a photo (%d) in %s:\n%s", len(written), len(lines), pictures, summary)
	}
	for _, w := range written {
		fh, err := os.Open(w[1])
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", w[1], err)
		}
		if b := img.Bounds(); b.Dx() != 320+240 || b.Dy() < 213 {
			t.Errorf("%s is %dx%d, want the 320x213 photo and its 240-pixel legend", w[1], b.Dx(), b.Dy())
		}
	}
}

func TestOriginalID(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"msrc_1_1_s", "msrc_1_1_s"},
		{"r2/msrc_1_1_s", "msrc_1_1_s"},
		{"r10/a/b", "a/b"},
		{"rx/a", "rx/a"},
		{"r/a", "r/a"},
		{"road.jpg", "road.jpg"},
	} {
		if got := originalID(c.id); got != c.want {
			t.Errorf("originalID(%q) = %q, want %q", c.id, got, c.want)
		}
	}
	if versionOrder("v10", "v9") <= 0 || versionOrder("v2", "v3") >= 0 || versionOrder("v4", "v4") != 0 {
		t.Error("versionOrder does not order v2 < v3 < v9 < v10")
	}
}

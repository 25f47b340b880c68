package imagefeat_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/imageseg"
	"github.com/mimlstream/mimlstream/internal/media/photo"
)

// benchPhotos decodes the development photos: $MIMLSTREAM_MSRC_DEV, else
// the shared msrc_v2_dev beside the repository, else testdata's three.
func benchPhotos(b *testing.B) []*photo.Image {
	dir := os.Getenv("MIMLSTREAM_MSRC_DEV")
	if dir == "" {
		dir = "../../../../shared/data/media/msrc_v2_dev"
		if _, err := os.Stat(dir); err != nil {
			dir = "../../../testdata/msrc_v2_sample"
		}
	}
	f, err := os.Open(filepath.Join(dir, "bags.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out []*photo.Image
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Image string `json:"image"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			b.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, line.Image))
		if err != nil {
			b.Fatal(err)
		}
		img, err := photo.Decode(data, photo.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, img)
	}
	b.Logf("%d photos from %s", len(out), dir)
	return out
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPhoto times the media path on the development photos, one photo
// per iteration, each sub-benchmark against the others in the same run:
// lab (sRGB to L*a*b*, the floor under every segmenter), superpixels (lab
// + SLIC + connectivity), featurize (lab + superpixels merged into regions
// + features: what the service does per photo), sbn. photos/cpu_s is
// photos per CPU second of the process (GC included): the per-core rate
// whatever else loads the machine.
func BenchmarkPhoto(b *testing.B) {
	photos := benchPhotos(b)
	f, err := imagefeat.New(imagefeat.DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	p := imageseg.DefaultParams()
	for _, bc := range []struct {
		name string
		run  func(*photo.Image)
	}{
		{"lab", func(img *photo.Image) { img.ToLab() }},
		{"superpixels", func(img *photo.Image) {
			imageseg.Components(imageseg.SLIC(img.ToLab(), p.Superpixels, p.Compactness, p.Iterations), 0)
		}},
		{"featurize", func(img *photo.Image) {
			if _, err := f.Featurize(img); err != nil {
				b.Fatal(err)
			}
		}},
		{"sbn", func(img *photo.Image) { imagefeat.SBN(img) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cpu0 := processCPU()
			i := 0
			for b.Loop() {
				bc.run(photos[i%len(photos)])
				i++
			}
			cpu := processCPU() - cpu0
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "photos/s")
			b.ReportMetric(float64(i)/cpu.Seconds(), "photos/cpu_s")
		})
	}
}

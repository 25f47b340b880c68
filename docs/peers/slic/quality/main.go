// Command quality prints, for the photos of a manifest with ground-truth
// masks, the mean boundary recall (tolerance 2 pixels), undersegmentation
// error, number of regions and CPU milliseconds per photo of the service's
// SLIC superpixels and of its merged regions, as JSON lines: the Go side of
// docs/peers/slic/compare.sh, which runs scikit-image's SLIC beside it with
// the same definitions (slic_peer.py).
//
//	go run ./docs/peers/slic/quality MANIFEST
//	go run ./docs/peers/slic/quality -params   (superpixels and compactness)
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mimlstream/mimlstream/internal/media/imageseg"
	"github.com/mimlstream/mimlstream/internal/media/photo"
)

type line struct {
	Image  string `json:"image"`
	GTMask string `json:"gt_mask"`
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-params" {
		// The settings the peer runs with: the service's superpixels.
		p := imageseg.DefaultParams()
		fmt.Println(p.Superpixels, p.Compactness)
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: quality MANIFEST | quality -params")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "quality:", err)
		os.Exit(1)
	}
}

func run(manifest string) error {
	f, err := os.Open(manifest)
	if err != nil {
		return err
	}
	defer f.Close()
	dir := filepath.Dir(manifest)
	p := imageseg.DefaultParams()
	type acc struct {
		br, ue, n float64
		cpu       time.Duration
	}
	var sp, rg acc
	photos := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return err
		}
		data, err := os.ReadFile(filepath.Join(dir, l.Image))
		if err != nil {
			return err
		}
		img, err := photo.Decode(data, photo.Limits{})
		if err != nil {
			return err
		}
		gf, err := os.Open(filepath.Join(dir, l.GTMask))
		if err != nil {
			return err
		}
		g, err := png.Decode(gf)
		gf.Close()
		if err != nil {
			return err
		}
		gt := g.(*image.Gray).Pix
		// Timed from the decoded pixels, as the peer times slic() on its
		// array: L*a*b* conversion included on both sides.
		c0 := cpu()
		// Superpixels with their specks joined (no colour merging: ΔE 0,
		// no region count bound), as scikit-image enforces connectivity.
		lab := img.ToLab()
		s := imageseg.Merge(lab, imageseg.SLIC(lab, p.Superpixels, p.Compactness, p.Iterations), 0, 1, len(img.Pix), 0)
		c1 := cpu()
		r, err := imageseg.Regions(img.ToLab(), p)
		if err != nil {
			return err
		}
		c2 := cpu()
		for _, x := range []struct {
			a *acc
			s *imageseg.Segmentation
			d time.Duration
		}{{&sp, s, c1 - c0}, {&rg, r, c2 - c1}} {
			x.a.br += imageseg.BoundaryRecall(x.s, gt, 2)
			x.a.ue += imageseg.UndersegmentationError(x.s, gt)
			x.a.n += float64(x.s.N)
			x.a.cpu += x.d
		}
		photos++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	n := float64(photos)
	enc := json.NewEncoder(os.Stdout)
	for _, x := range []struct {
		name string
		a    acc
	}{{fmt.Sprintf("ours: SLIC k=%d m=%g iter=%d, specks joined", p.Superpixels, p.Compactness, p.Iterations), sp},
		{fmt.Sprintf("ours: merged regions (dE<%g, %d to %d regions, min %.3g of the photo)", p.MergeDistance, p.MinRegions, p.MaxRegions, p.MinArea), rg}} {
		if err := enc.Encode(map[string]any{"method": x.name, "photos": photos, "boundary_recall": x.a.br / n,
			"undersegmentation_error": x.a.ue / n, "regions": x.a.n / n, "cpu_ms_per_photo": float64(x.a.cpu.Microseconds()) / 1000 / n}); err != nil {
			return err
		}
	}
	return nil
}

// Package photoeval evaluates instance annotation on photos: it turns a
// manifest of photos with ground-truth region masks into a dataset (one
// bag per photo, one instance per region of the service's segmentation or
// of the ground truth) and scores predicted region labels the way a
// person holding the photo would: every predicted region paints its label
// on its pixels, and each ground-truth region takes the label most of its
// pixels were painted with (region accuracy, reported as
// instance_accuracy) while each pixel counts on its own (pixel accuracy).
// Void pixels (id 0) count in neither.
package photoeval

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/mimlstream/mimlstream/internal/eval"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/imageseg"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/mil"
)

// Options select how photos become bags.
type Options struct {
	// Featurizer segments and describes the photos (the service's own
	// segmentation). Ignored with GTRegions.
	Featurizer *imagefeat.Featurizer
	// GTRegions makes the ground-truth regions the instances (the
	// segmentation an evaluation can compare against the service's).
	GTRegions bool
	// Classes is the vocabulary; nil reads classes.json ({"classes":
	// [...]}) beside the manifest, or else takes the labels' sorted union.
	Classes []string
	Limits  photo.Limits
	// Workers bounds the photos featurized at once (<= 0: GOMAXPROCS).
	Workers int
}

// truth is what scoring needs of one photo.
type truth struct {
	gt     []uint8 // region id per pixel, 0 void
	class  []int   // class of region id (index by id), -1 for an unknown id
	pixels [][]int32
}

// Data is a manifest made into a dataset, with the truth its scores need.
type Data struct {
	// Dataset's bags carry their photo's holistic vector (mil.Bag.Holistic).
	Dataset *mil.Dataset
	truth   map[string]*truth
}

// Build reads the manifest at path and featurizes every photo.
func Build(ctx context.Context, path string, opt Options) (*Data, error) {
	lines, dir, err := photobag.ReadManifest(path)
	if err != nil {
		return nil, err
	}
	classes := opt.Classes
	if classes == nil {
		if classes, err = photobag.Classes(dir, lines); err != nil {
			return nil, err
		}
	}
	index := make(map[string]int, len(classes))
	for i, c := range classes {
		index[c] = i
	}
	if opt.Featurizer == nil && !opt.GTRegions {
		return nil, fmt.Errorf("photoeval: no featurizer")
	}
	name := filepath.Base(filepath.Dir(path))
	if opt.GTRegions {
		name += " (ground-truth regions)"
	}
	d := &Data{Dataset: &mil.Dataset{Name: name, Classes: classes, Dim: imagefeat.Dim, Bags: make([]mil.Bag, len(lines))},
		truth: make(map[string]*truth, len(lines))}
	truths := make([]*truth, len(lines))
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, len(lines))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				truths[i], errs[i] = d.build(i, lines[i], dir, index, opt)
			}
		})
	}
feed:
	for i := range lines {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", lines[i].ID, lines[i].Image, err)
		}
		d.truth[lines[i].ID] = truths[i]
	}
	return d, nil
}

// build featurizes photo i into bag i and returns its truth.
func (d *Data) build(i int, l photobag.Line, dir string, index map[string]int, opt Options) (*truth, error) {
	data, err := os.ReadFile(filepath.Join(dir, l.Image))
	if err != nil {
		return nil, err
	}
	img, err := photo.Decode(data, opt.Limits)
	if err != nil {
		return nil, err
	}
	b := &d.Dataset.Bags[i]
	b.ID = l.ID
	b.Labels = []int{}
	for _, c := range l.Labels {
		k, ok := index[c]
		if !ok {
			return nil, fmt.Errorf("label %q not in the classes", c)
		}
		b.Labels = append(b.Labels, k)
	}
	slices.Sort(b.Labels)
	b.Labels = slices.Compact(b.Labels)
	if l.GTMask == "" {
		if opt.GTRegions {
			return nil, fmt.Errorf("no gt_mask: ground-truth regions need it")
		}
		// A photo to fit on, not to score: its bag, no truth (Score
		// refuses it).
		res, err := opt.Featurizer.Featurize(img)
		if err != nil {
			return nil, err
		}
		b.Instances, b.Holistic = res.Instances, res.Holistic
		return nil, nil
	}
	t, err := readTruth(filepath.Join(dir, l.GTMask), img.W, img.H, l.Regions, index)
	if err != nil {
		return nil, err
	}
	var res *imagefeat.Result
	if opt.GTRegions {
		seg := &imageseg.Segmentation{W: img.W, H: img.H, Labels: make([]int32, len(t.gt))}
		ids := map[uint8]int32{}
		for _, r := range l.Regions {
			ids[uint8(r.ID)] = int32(len(ids))
		}
		seg.N = len(ids)
		for p, g := range t.gt {
			if k, ok := ids[g]; ok && g != 0 {
				seg.Labels[p] = k
			} else {
				seg.Labels[p] = -1
			}
		}
		res = imagefeat.Describe(img.ToLab(), seg)
	} else if res, err = opt.Featurizer.Featurize(img); err != nil {
		return nil, err
	}
	b.Instances = res.Instances
	b.Holistic = res.Holistic
	t.pixels = res.Segmentation.Pixels()
	// An instance's label, for the supervised upper bound only: the class
	// most of its non-void pixels have (Unlabeled if none has one).
	b.InstanceLabels = make([]int, len(t.pixels))
	q := len(index)
	votes := make([]int, q)
	for k, px := range t.pixels {
		clear(votes)
		for _, p := range px {
			if c := t.class[t.gt[p]]; c >= 0 {
				votes[c]++
			}
		}
		b.InstanceLabels[k] = argmax(votes)
	}
	return t, nil
}

// argmax returns the index of the largest count (the lowest on ties), or
// mil.Unlabeled when every count is zero.
func argmax(votes []int) int {
	best, bi := 0, mil.Unlabeled
	for c, v := range votes {
		if v > best {
			best, bi = v, c
		}
	}
	return bi
}

func readTruth(path string, w, h int, regions []photobag.GTRegion, index map[string]int) (*truth, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := png.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("gt_mask %s: %w", path, err)
	}
	g, ok := m.(*image.Gray)
	if !ok {
		return nil, fmt.Errorf("gt_mask %s: want an 8-bit greyscale PNG, got %T", path, m)
	}
	if g.Rect.Dx() != w || g.Rect.Dy() != h {
		return nil, fmt.Errorf("gt_mask %s is %dx%d, the photo %dx%d", path, g.Rect.Dx(), g.Rect.Dy(), w, h)
	}
	t := &truth{gt: make([]uint8, w*h), class: make([]int, 256)}
	for y := range h {
		copy(t.gt[y*w:(y+1)*w], g.Pix[y*g.Stride:y*g.Stride+w])
	}
	for i := range t.class {
		t.class[i] = -1
	}
	for _, r := range regions {
		c, ok := index[r.Label]
		if !ok || r.ID < 1 || r.ID > 255 {
			return nil, fmt.Errorf("region %d: label %q or id out of range", r.ID, r.Label)
		}
		t.class[r.ID] = c
	}
	for p, id := range t.gt {
		if id != 0 && t.class[id] < 0 {
			return nil, fmt.Errorf("gt_mask pixel %d has region id %d, which the manifest line does not list", p, id)
		}
	}
	return t, nil
}

// Counts are the tallies of region and pixel accuracy.
type Counts struct {
	Regions, RegionsRight int
	Pixels, PixelsRight   int
}

// Paint returns the label each pixel is painted with: the predicted
// label of the instance whose region holds it, -1 where none does.
func (t *truth) paint(labels []int) []int {
	out := make([]int, len(t.gt))
	for i := range out {
		out[i] = -1
	}
	for k, px := range t.pixels {
		for _, p := range px {
			out[p] = labels[k]
		}
	}
	return out
}

// score tallies one photo's predicted instance labels.
func (t *truth) score(labels []int, q int) (Counts, error) {
	if len(labels) != len(t.pixels) {
		return Counts{}, fmt.Errorf("%d instance labels for %d regions", len(labels), len(t.pixels))
	}
	painted := t.paint(labels)
	// votes[id][c+1]: pixels of region id painted c (-1: unpainted).
	votes := map[uint8][]int{}
	var c Counts
	for p, id := range t.gt {
		if id == 0 {
			continue
		}
		v := votes[id]
		if v == nil {
			v = make([]int, q+1)
			votes[id] = v
		}
		l := painted[p]
		if l < -1 || l >= q {
			return Counts{}, fmt.Errorf("instance label %d outside the %d classes", l, q)
		}
		v[l+1]++
		c.Pixels++
		if l == t.class[id] {
			c.PixelsRight++
		}
	}
	for id, v := range votes {
		c.Regions++
		// The label most pixels carry, the lowest class on ties; an
		// unpainted majority is wrong.
		best, bl := -1, -2
		for k, n := range v {
			if n > best {
				best, bl = n, k-1
			}
		}
		if bl == t.class[id] {
			c.RegionsRight++
		}
	}
	return c, nil
}

// Score is an eval.Config.InstanceScore: region accuracy by pixel vote as
// instance_accuracy, and pixel accuracy, over the fold's photos (each
// region and each pixel counting once).
func (d *Data) Score(test []*mil.Bag, preds []measure.Prediction) (map[string]float64, error) {
	var total Counts
	q := len(d.Dataset.Classes)
	if len(preds) > 0 && preds[0].InstanceLabels == nil {
		// A bag-level model (MIER): no region is labeled, so there is no
		// region or pixel accuracy, as measure reports no instance accuracy.
		return map[string]float64{}, nil
	}
	for i, b := range test {
		t := d.truth[b.ID]
		if t == nil {
			return nil, fmt.Errorf("bag %q is not a photo of this data with its ground truth (gt_mask)", b.ID)
		}
		if preds[i].InstanceLabels == nil {
			return nil, fmt.Errorf("bag %q: the model labels no instance", b.ID)
		}
		c, err := t.score(preds[i].InstanceLabels, q)
		if err != nil {
			return nil, fmt.Errorf("bag %q: %w", b.ID, err)
		}
		total.Regions += c.Regions
		total.RegionsRight += c.RegionsRight
		total.Pixels += c.Pixels
		total.PixelsRight += c.PixelsRight
	}
	out := map[string]float64{}
	if total.Regions > 0 {
		out[measure.InstanceAccuracy] = float64(total.RegionsRight) / float64(total.Regions)
	}
	if total.Pixels > 0 {
		out[eval.PixelAccuracy] = float64(total.PixelsRight) / float64(total.Pixels)
	}
	return out, nil
}

// RegionMap returns the instance covering each pixel of photo id
// (row-major, -1 for none), as its instances were cut; nil for an unknown
// id.
func (d *Data) RegionMap(id string) []int32 {
	t := d.truth[id]
	if t == nil {
		return nil
	}
	out := make([]int32, len(t.gt))
	for i := range out {
		out[i] = -1
	}
	for k, px := range t.pixels {
		for _, p := range px {
			out[p] = int32(k)
		}
	}
	return out
}

// Command figure draws the annotated photos of docs/media.md: the photos
// of msrc_v2_dev named on the command line, each annotated by a model
// fitted on the other photos' bag labels only (never on the shown photo),
// inductively (no label given) and transductively (its bag labels given),
// beside its ground truth painted the same way (each region the class
// most of its pixels have).
//
//	go run ./docs/media/figure -data ../shared/data/media/msrc_v2_dev/bags.jsonl -out docs/media 5_12_s 12_29_s
package main

import (
	"context"
	"flag"
	"fmt"
	"image/png"
	"os"
	"path/filepath"

	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/media/photoeval"
	"github.com/mimlstream/mimlstream/internal/media/picture"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
)

func main() {
	data := flag.String("data", "../shared/data/media/msrc_v2_dev/bags.jsonl", "photo manifest")
	out := flag.String("out", "docs/media", "folder of the PNGs")
	kind := flag.String("model", "orlr", "model kind")
	flag.Parse()
	if err := run(*data, *out, *kind, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "figure:", err)
		os.Exit(1)
	}
}

func run(manifest, out, kindName string, names []string) error {
	ctx := context.Background()
	f, err := imagefeat.New(imagefeat.DefaultParams())
	if err != nil {
		return err
	}
	d, err := photoeval.Build(ctx, manifest, photoeval.Options{Featurizer: f})
	if err != nil {
		return err
	}
	kind, err := catalog.New().Lookup(kindName)
	if err != nil {
		return err
	}
	shown := map[string]bool{}
	for _, n := range names {
		shown["msrc_"+n] = true
	}
	train := &mil.Dataset{Name: d.Dataset.Name, Classes: d.Dataset.Classes, Dim: d.Dataset.Dim}
	for _, b := range d.Dataset.Bags {
		if !shown[b.ID] {
			train.Bags = append(train.Bags, b)
		}
	}
	m, err := kind.Fit(ctx, train, models.FitOptions{Seed: 1})
	if err != nil {
		return err
	}
	for _, b := range d.Dataset.Bags {
		if !shown[b.ID] {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(filepath.Dir(manifest), "images", b.ID[len("msrc_"):]+".jpg"))
		if err != nil {
			return err
		}
		img, err := photo.Decode(raw, photo.Limits{})
		if err != nil {
			return err
		}
		regions := d.RegionMap(b.ID)
		for _, v := range []struct {
			suffix string
			labels func() ([]int, []int, error)
		}{
			{"truth", func() ([]int, []int, error) { return b.InstanceLabels, b.Labels, nil }},
			{string(models.Inductive), func() ([]int, []int, error) { return annotate(ctx, m, b, models.Inductive) }},
			{string(models.Transductive), func() ([]int, []int, error) { return annotate(ctx, m, b, models.Transductive) }},
		} {
			labels, bag, err := v.labels()
			if err != nil {
				return err
			}
			title := fmt.Sprintf("%s, %s", b.ID[len("msrc_"):], v.suffix)
			if v.suffix == "truth" {
				title = b.ID[len("msrc_"):] + ", truth"
			}
			pic, err := picture.Render(picture.Input{Photo: img, Regions: regions, Labels: labels, Classes: d.Dataset.Classes, BagLabels: bag, Title: title})
			if err != nil {
				return err
			}
			path := filepath.Join(out, fmt.Sprintf("%s-%s-%s.png", b.ID[len("msrc_"):], kindName, v.suffix))
			if v.suffix == "truth" {
				path = filepath.Join(out, fmt.Sprintf("%s-truth.png", b.ID[len("msrc_"):]))
			}
			fh, err := os.Create(path)
			if err != nil {
				return err
			}
			if err := png.Encode(fh, pic); err != nil {
				fh.Close()
				return err
			}
			if err := fh.Close(); err != nil {
				return err
			}
			fmt.Println(path)
		}
	}
	return nil
}

// annotate returns the instance labels and bag labels of b, inductively
// without its labels or transductively with them.
func annotate(ctx context.Context, m models.Model, b mil.Bag, mode models.Mode) ([]int, []int, error) {
	q := mil.Bag{ID: b.ID, Instances: b.Instances, Holistic: b.Holistic}
	if mode == models.Transductive {
		q.Labels = b.Labels
	}
	a, err := m.Annotate(ctx, &q, mode)
	if err != nil {
		return nil, nil, err
	}
	if mode == models.Transductive {
		return a.InstanceLabels, b.Labels, nil
	}
	return a.InstanceLabels, a.BagLabels, nil
}

// Package mediaset reads a manifest of photos or of documents into the
// dataset the service would make of them: the photos segmented and
// featurized, the documents cut into passages and hashed, by the featurizer
// ingest uses, so that a model fitted on the set (retrainer fit) takes the
// stream's bags and one evaluated on it (retrainer eval) is judged on them.
// It is the one loader of media manifests both commands go through.
package mediaset

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/media/photoeval"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/texteval"
	"github.com/mimlstream/mimlstream/internal/mil"
)

// Kind says what a manifest names.
type Kind int

// The manifests: none (a dataset file), photos, documents.
const (
	NotMedia Kind = iota
	Photos
	Documents
)

// KindOf returns what the file at path is: a photo manifest (JSON lines
// with "image"), a document manifest (lines with "text" or "path"), or
// neither.
func KindOf(path string) Kind {
	switch {
	case photobag.IsPhotoManifest(path):
		return Photos
	case text.IsManifest(path):
		return Documents
	}
	return NotMedia
}

// Options are the settings of Load.
type Options struct {
	// GT takes the ground-truth regions or passages of each line as its
	// instances instead of the service's (evaluation only: the stream has
	// no ground truth; the set then has no featurizer).
	GT bool
	// Passages and Dim set the document featurizer ("" and 0: the
	// service's, text.DefaultSegmenter and text.DefaultDim).
	Passages text.Segmenter
	Dim      int
	Workers  int // <= 0: GOMAXPROCS
}

// Set is a featurized manifest.
type Set struct {
	Kind Kind
	Data *mil.Dataset
	// Featurizer made the instances: what a model fitted on them records
	// and the annotator checks the stream's bags against. Nil with GT.
	Featurizer *media.Featurizer
	// InstanceScore scores predicted instance labels against the
	// manifest's ground truth (eval.Config.InstanceScore); it fails on a
	// line without one.
	InstanceScore func(test []*mil.Bag, preds []measure.Prediction) (map[string]float64, error)
}

// TextFeaturizer returns the document featurizer of opt: the service's
// unless Passages or Dim say otherwise.
func (opt Options) TextFeaturizer() (text.Featurizer, error) {
	seg := opt.Passages
	if seg == "" {
		seg = text.DefaultSegmenter
	}
	return text.Featurizer{Segmentation: text.Segmentation{Segmenter: seg}, Dim: opt.Dim}.Normalized()
}

// Load featurizes the manifest at path, of kind KindOf(path).
func Load(ctx context.Context, path string, opt Options) (*Set, error) {
	switch KindOf(path) {
	case Photos:
		po := photoeval.Options{Workers: opt.Workers, GTRegions: opt.GT}
		var id *media.Featurizer
		if !opt.GT {
			f, err := imagefeat.New(imagefeat.DefaultParams())
			if err != nil {
				return nil, err
			}
			po.Featurizer = f
			i := f.Identity()
			id = &i
		}
		d, err := photoeval.Build(ctx, path, po)
		if err != nil {
			return nil, err
		}
		return &Set{Kind: Photos, Data: d.Dataset, Featurizer: id, InstanceScore: d.Score}, nil
	case Documents:
		f, err := opt.TextFeaturizer()
		if err != nil {
			return nil, err
		}
		es, err := text.ReadManifestFile(path)
		if err != nil {
			return nil, err
		}
		c, err := texteval.Build(ctx, es, texteval.Options{Featurizer: f, GTPassages: opt.GT, Workers: opt.Workers,
			Classes: text.Classes(filepath.Dir(path), es)})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		c.Data.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		s := &Set{Kind: Documents, Data: c.Data, InstanceScore: c.InstanceScore}
		if !opt.GT {
			i := f.Identity()
			s.Featurizer = &i
		}
		return s, nil
	}
	return nil, fmt.Errorf("%s: neither a photo nor a document manifest", path)
}

// Package streamtest holds the helpers shared by the tests of the pipeline's
// packages and the end-to-end tests: an embedded broker and Redis per test,
// a TCP proxy that takes a dependency down and up, polling helpers, a toy
// dataset, the check of a command's exit codes, and a small but real model
// kind that depends on no paper's model: a weakly supervised
// nearest-centroid classifier. The kind implements the models contract and
// the models.FeatureMapper capability, so it exercises the feature
// cache too. Only tests import this package.
package streamtest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// KindName is the name of the centroid kind.
const KindName = "centroid"

// CentroidKind returns the kind. Parameters:
//
//	iters       refinement iterations (default 10): each instance of a
//	            labeled bag is assigned to the nearest centroid among its
//	            bag's classes, then centroids are recomputed
//	temperature softmax temperature of the instance scores (default 0.05)
//	max_labels  refuse transductive bags with more labels (default 0: no
//	            limit), standing in for an exact algorithm's limit
func CentroidKind() models.Kind {
	return models.Kind{
		Name:          KindName,
		Description:   "weakly supervised nearest centroid (test model)",
		InstanceLevel: true,
		Fit:           fit,
		Decode:        decode,
		Params: []models.ParamSpec{
			{Name: "iters", Type: models.ParamInt, Default: "10", Doc: "refinement iterations"},
			{Name: "temperature", Type: models.ParamFloat, Default: "0.05", Doc: "softmax temperature of the instance scores"},
			{Name: "max_labels", Type: models.ParamInt, Default: "0", Doc: "refuse transductive bags with more labels (0: no limit)"},
		},
	}
}

type state struct {
	Centroids   [][]float64 `json:"centroids"`
	Temperature float64     `json:"temperature"`
	MaxLabels   int         `json:"max_labels"`
}

// Model is a fitted centroid model.
type Model struct {
	meta  models.Meta
	st    state
	space string
}

func newModel(meta models.Meta, st state) *Model {
	h := sha256.New()
	var buf [8]byte
	for _, c := range st.Centroids {
		for _, v := range c {
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
			h.Write(buf[:])
		}
	}
	return &Model{meta: meta, st: st, space: "centroid-" + hex.EncodeToString(h.Sum(nil)[:8])}
}

func fit(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
	iters, err := opt.Params.Int("iters", 10)
	if err != nil {
		return nil, err
	}
	temp, err := opt.Params.Float("temperature", 0.05)
	if err != nil {
		return nil, err
	}
	maxLabels, err := opt.Params.Int("max_labels", 0)
	if err != nil {
		return nil, err
	}
	if temp <= 0 {
		return nil, errors.New("centroid: temperature must be positive")
	}
	nc, dim := len(train.Classes), train.Dim
	if nc == 0 || dim <= 0 {
		return nil, errors.New("centroid: dataset without classes or dimension")
	}
	for i := range train.Bags {
		if err := train.Bags[i].Validate(dim, nc); err != nil {
			return nil, fmt.Errorf("centroid fit: %w: %w", models.ErrBadInput, err)
		}
	}
	cent := make([][]float64, nc)
	if w, ok := opt.Warm.(*Model); ok && len(w.st.Centroids) == nc && w.meta.Dim == dim {
		for c := range cent {
			cent[c] = append([]float64(nil), w.st.Centroids[c]...)
		}
	} else {
		// Start from the mean of the instances of the bags holding c.
		for c := range cent {
			cent[c] = make([]float64, dim)
		}
		update(train, cent, func(b *mil.Bag, x []float64) []int { return b.Labels })
	}
	for range iters {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		update(train, cent, func(b *mil.Bag, x []float64) []int {
			return []int{nearest(cent, x, b.Labels)}
		})
	}
	meta := models.Meta{Kind: KindName, Classes: train.Classes, Dim: dim, InstanceLevel: true, Params: opt.Params}
	return newModel(meta, state{Centroids: cent, Temperature: temp, MaxLabels: maxLabels}), nil
}

// update recomputes each centroid as the mean of the instances assigned to
// it; a class with no instance keeps its centroid.
func update(train *mil.Dataset, cent [][]float64, assign func(b *mil.Bag, x []float64) []int) {
	dim := len(cent[0])
	sum := make([][]float64, len(cent))
	cnt := make([]int, len(cent))
	for c := range sum {
		sum[c] = make([]float64, dim)
	}
	for i := range train.Bags {
		b := &train.Bags[i]
		if len(b.Labels) == 0 {
			continue
		}
		for _, x := range b.Instances {
			for _, c := range assign(b, x) {
				cnt[c]++
				for j, v := range x {
					sum[c][j] += v
				}
			}
		}
	}
	for c := range cent {
		if cnt[c] == 0 {
			continue
		}
		for j := range cent[c] {
			cent[c][j] = sum[c][j] / float64(cnt[c])
		}
	}
}

func sqdist(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return s
}

// nearest returns the class among allowed (every class when allowed is nil)
// whose centroid is closest to x; ties go to the lower index.
func nearest(cent [][]float64, x []float64, allowed []int) int {
	best, bestD := -1, math.Inf(1)
	consider := func(c int) {
		if d := sqdist(cent[c], x); d < bestD {
			best, bestD = c, d
		}
	}
	if allowed == nil {
		for c := range cent {
			consider(c)
		}
	} else {
		for _, c := range allowed {
			consider(c)
		}
	}
	return best
}

func decode(meta models.Meta, raw []byte) (models.Model, error) {
	var st state
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	if len(st.Centroids) != len(meta.Classes) {
		return nil, fmt.Errorf("centroid: %d centroids for %d classes", len(st.Centroids), len(meta.Classes))
	}
	for _, c := range st.Centroids {
		if len(c) != meta.Dim {
			return nil, fmt.Errorf("centroid: centroid of dimension %d, want %d", len(c), meta.Dim)
		}
	}
	return newModel(meta, st), nil
}

// Meta implements models.Model.
func (m *Model) Meta() models.Meta { return m.meta }

// MarshalState implements models.Model.
func (m *Model) MarshalState() ([]byte, error) { return json.Marshal(m.st) }

// FeatureSpace implements annotate.FeatureMapper: the mapped vector depends on
// the centroids only.
func (m *Model) FeatureSpace() string { return m.space }

// MapInstance returns the squared distances of x to the centroids.
func (m *Model) MapInstance(x []float64) ([]float64, error) {
	if len(x) != m.meta.Dim {
		return nil, fmt.Errorf("%w: %w (got %d, want %d)", models.ErrBadInput, mil.ErrDimension, len(x), m.meta.Dim)
	}
	d := make([]float64, len(m.st.Centroids))
	for c, mu := range m.st.Centroids {
		d[c] = sqdist(mu, x)
	}
	return d, nil
}

// Annotate implements models.Model.
func (m *Model) Annotate(ctx context.Context, b *mil.Bag, mode models.Mode) (models.Annotation, error) {
	mapped := make([][]float64, len(b.Instances))
	for i, x := range b.Instances {
		v, err := m.MapInstance(x)
		if err != nil {
			return models.Annotation{}, err
		}
		mapped[i] = v
	}
	return m.AnnotateMapped(ctx, b, mapped, mode)
}

// AnnotateMapped implements annotate.FeatureMapper.
func (m *Model) AnnotateMapped(_ context.Context, b *mil.Bag, mapped [][]float64, mode models.Mode) (models.Annotation, error) {
	nc := len(m.st.Centroids)
	if err := b.Validate(m.meta.Dim, nc); err != nil {
		return models.Annotation{}, fmt.Errorf("%w: %w", models.ErrBadInput, err)
	}
	var allowed []int
	if mode == models.Transductive && b.Labeled() {
		if m.st.MaxLabels > 0 && len(b.Labels) > m.st.MaxLabels {
			return models.Annotation{}, fmt.Errorf("bag %q has %d labels, limit %d: %w", b.ID, len(b.Labels), m.st.MaxLabels, models.ErrLabelSetTooLarge)
		}
		allowed = b.Labels
	}
	ann := models.Annotation{BagScores: make([]float64, nc), InstanceScores: make([][]float64, len(mapped))}
	present := make([]bool, nc)
	for i, d := range mapped {
		if len(d) != nc {
			return models.Annotation{}, fmt.Errorf("%w: mapped instance of length %d, want %d", models.ErrBadInput, len(d), nc)
		}
		s := softmin(d, m.st.Temperature)
		ann.InstanceScores[i] = s
		for c, v := range s {
			ann.BagScores[c] = max(ann.BagScores[c], v)
		}
		if allowed != nil && len(allowed) == 0 {
			continue // a negative bag: no class to give its instances
		}
		best, bestD := -1, math.Inf(1)
		for c := range nc {
			if allowed != nil && !b.HasLabel(c) {
				continue
			}
			if d[c] < bestD {
				best, bestD = c, d[c]
			}
		}
		ann.InstanceLabels = append(ann.InstanceLabels, best)
		present[best] = true
	}
	ann.BagLabels = []int{}
	for c, p := range present {
		if p {
			ann.BagLabels = append(ann.BagLabels, c)
		}
	}
	return ann, nil
}

// softmin returns softmax(-d/t), computed stably.
func softmin(d []float64, t float64) []float64 {
	lo := math.Inf(1)
	for _, v := range d {
		lo = min(lo, v)
	}
	s := make([]float64, len(d))
	z := 0.0
	for c, v := range d {
		s[c] = math.Exp(-(v - lo) / t)
		z += s[c]
	}
	for c := range s {
		s[c] /= z
	}
	return s
}

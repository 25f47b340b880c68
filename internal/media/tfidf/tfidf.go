// Package tfidf holds the model side of text features: the IDF of hashed
// features, learned from the passages a model is fitted on and stored in
// the model (Weighted wraps any kind so), so that the stream that
// featurizes documents (package text) keeps no vocabulary state; and, for
// a kind with no sparse path, the latent semantic basis (lsa.Basis) of those
// passages it is fitted on instead of 2^17 densified features. It is
// apart from package text because ingest, which featurizes, must not link
// the models.
package tfidf

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/mimlstream/mimlstream/internal/lsa"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// IDF is the inverse document frequency of each hashed feature, learned
// from the passages a model is fitted on, with scikit-learn's smoothing
// (TfidfTransformer(smooth_idf=True)): idf(j) = ln((1+N)/(1+df(j))) + 1
// for N passages of which df(j) have feature j. A feature never seen has
// df 0, so only the seen ones are stored.
type IDF struct {
	N   int     `json:"n"`
	Idx []int32 `json:"idx"` // ascending
	DF  []int32 `json:"df"`
}

// FitIDF counts the document frequencies of the sparse instances of bags.
func FitIDF(bags []mil.Bag) IDF {
	df := map[int32]int32{}
	n := 0
	for i := range bags {
		for _, v := range bags[i].Sparse {
			n++
			for k, j := range v.Idx {
				if v.Val[k] != 0 {
					df[j]++
				}
			}
		}
	}
	w := IDF{N: n, Idx: make([]int32, 0, len(df))}
	for j := range df {
		w.Idx = append(w.Idx, j)
	}
	slices.Sort(w.Idx)
	w.DF = make([]int32, len(w.Idx))
	for k, j := range w.Idx {
		w.DF[k] = df[j]
	}
	return w
}

// Weight returns idf(j).
func (w IDF) Weight(j int32) float64 {
	df := 0
	if k, ok := slices.BinarySearch(w.Idx, j); ok {
		df = int(w.DF[k])
	}
	return math.Log(float64(1+w.N)/float64(1+df)) + 1
}

// Apply returns v weighted by w (when idf) and L2-normalised (when l2).
func (w IDF) Apply(v mil.SparseVec, idf, l2 bool) mil.SparseVec {
	out := v.Clone()
	if idf {
		// Both index lists ascend: one merge, no search per entry.
		k := 0
		for i, j := range out.Idx {
			for k < len(w.Idx) && w.Idx[k] < j {
				k++
			}
			df := 0
			if k < len(w.Idx) && w.Idx[k] == j {
				df = int(w.DF[k])
			}
			out.Val[i] *= math.Log(float64(1+w.N)/float64(1+df)) + 1
		}
	}
	if l2 {
		if n := math.Sqrt(out.SqNorm()); n > 0 {
			for k := range out.Val {
				out.Val[k] /= n
			}
		}
	}
	return out
}

// Suffix ends the name of a Weighted kind.
const Suffix = "+tfidf"

// KindName is the kind a model of kind name is fitted as on bags made by
// f: name+Suffix when f is the text featurizer (its passages carry term
// frequencies, and the IDF belongs to the model) and name is not Weighted
// already, name otherwise. Every door that fits on documents (the
// retrainer's refits, retrainer fit, retrainer eval) names its kind
// through it and looks the name up in its registry, where package catalog
// holds every kind's Weighted form: so the model records that it weighs
// passages by IDF in its kind, and an annotator decodes it by that name.
func KindName(name string, f *media.Featurizer) string {
	if f == nil || f.Name != text.FeaturizerName || strings.HasSuffix(name, Suffix) {
		return name
	}
	return name + Suffix
}

// The parameters Weighted adds to the kind it wraps.
const (
	ParamIDF = "text_idf"
	ParamL2  = "text_l2"
)

// Weighted returns a kind that fits inner on IDF-weighted, L2-normalised
// passages: its Fit learns the IDF from the training bags and keeps it in
// the model, whose Annotate weights each bag's passages the same way before
// inner's model sees them. So the IDF comes from the data a model is
// fitted on, and the stream that featurizes documents holds no vocabulary
// state. Bags are a text featurizer's sparse passages; dense bags are
// read as sparse.
//
// With ParamRank above 0 the inner kind is fitted on the passages'
// coordinates in a latent semantic basis (lsa.Basis) learned from the same
// weighted training passages and stored beside the IDF: the default for a
// kind with no sparse path (Kind.Sparse false), which would otherwise get
// the hashed features densified, and a choice for the others.
func Weighted(inner models.Kind) models.Kind {
	defaultRank := 0
	if !inner.Sparse {
		defaultRank = DefaultRank
	}
	// As a registry serves it: the inner kind densifies for itself when it
	// has no sparse path.
	inner = models.Wrap(inner)
	k := inner
	k.Name = inner.Name + Suffix
	k.Description = inner.Description + ", on passages weighted by the IDF of its training passages"
	if defaultRank > 0 {
		k.Description += " and projected on their latent semantic basis"
	}
	k.Sparse = true
	if inner.Params != nil {
		k.Params = append(slices.Clone(inner.Params), Params()...)
	}
	if inner.EmptyLabelSets != nil {
		k.EmptyLabelSets = func(p models.Params) (bool, error) { return inner.EmptyLabelSets(innerParams(p)) }
	}
	k.Fit = func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
		idf, l2, err := weighting(opt.Params)
		if err != nil {
			return nil, err
		}
		w := weightedModel{name: k.Name, inner: inner, idf: FitIDF(train.Bags), useIDF: idf, l2: l2, params: opt.Params, dim: train.Dim}
		rank, err := opt.Params.Int(ParamRank, defaultRank)
		if err != nil {
			return nil, err
		}
		if rank < 0 {
			return nil, fmt.Errorf("%w: %s=%d, want at least 0", models.ErrBadInput, ParamRank, rank)
		}
		data := w.weighAll(train)
		if rank > 0 {
			var xs []mil.SparseVec
			for _, b := range data.Bags {
				xs = append(xs, b.Sparse...)
			}
			basis, err := lsa.FitBasis(ctx, xs, rank, rand.New(rand.NewPCG(uint64(opt.Seed), 0x6c7361)))
			if err != nil {
				return nil, fmt.Errorf("%s fit: %w", k.Name, err)
			}
			w.basis = &basis
			data.Dim = basis.Rank
			for i := range data.Bags {
				w.project(&data.Bags[i])
			}
		}
		opt.Params = innerParams(opt.Params)
		if opt.Warm != nil {
			if wm, ok := opt.Warm.(*weightedModel); ok {
				opt.Warm = wm.model
			} else {
				opt.Warm = nil
			}
		}
		m, err := inner.Fit(ctx, data, opt)
		if err != nil {
			return nil, err
		}
		w.model = m
		return &w, nil
	}
	k.Decode = func(meta models.Meta, state []byte) (models.Model, error) {
		var s weightedState
		if err := json.Unmarshal(state, &s); err != nil {
			return nil, fmt.Errorf("decode %s: %w", k.Name, err)
		}
		if s.Basis != nil {
			if err := s.Basis.Validate(); err != nil {
				return nil, fmt.Errorf("decode %s: %w", k.Name, err)
			}
		}
		im, err := inner.Decode(s.InnerMeta, s.Inner)
		if err != nil {
			return nil, err
		}
		dim := s.Dim
		if dim == 0 { // a model saved before the basis: its inner model's
			dim = s.InnerMeta.Dim
		}
		return &weightedModel{name: k.Name, inner: inner, idf: s.IDF, useIDF: s.UseIDF, l2: s.L2, params: meta.Params,
			model: im, basis: s.Basis, dim: dim}, nil
	}
	return k
}

// Params declares the parameters Weighted adds to the kind it wraps.
func Params() []models.ParamSpec {
	return []models.ParamSpec{
		{Name: ParamIDF, Type: models.ParamBool, Default: "true", Doc: "weight hashed terms by the IDF of the training passages"},
		{Name: ParamL2, Type: models.ParamBool, Default: "true", Doc: "L2-normalise each passage after weighting"},
		{Name: ParamRank, Type: models.ParamInt, Range: ">= 0",
			Doc: "dimensions of the latent semantic basis (truncated SVD of the weighted training passages) the kind is fitted on; 0: the weighted passages themselves (default: " +
				strconv.Itoa(DefaultRank) + " for a kind without a sparse path, 0 otherwise)"},
	}
}

// ParamRank is the dimension of the latent semantic basis a Weighted kind
// is fitted on; DefaultRank is its default for a kind with no sparse path.
const (
	ParamRank   = "text_rank"
	DefaultRank = 300
)

func weighting(p models.Params) (idf, l2 bool, err error) {
	if idf, err = p.Bool(ParamIDF, true); err != nil {
		return
	}
	l2, err = p.Bool(ParamL2, true)
	return
}

// innerParams is p without Weighted's keys.
func innerParams(p models.Params) models.Params {
	out := models.Params{}
	for k, v := range p {
		if k != ParamIDF && k != ParamL2 && k != ParamRank {
			out[k] = v
		}
	}
	return out
}

// weightedModel is a model of a Weighted kind.
type weightedModel struct {
	name   string
	inner  models.Kind
	idf    IDF
	useIDF bool
	l2     bool
	params models.Params
	model  models.Model
	// basis, when set, maps the weighted passages to the dense
	// coordinates the inner model takes; dim is the passages' own.
	basis *lsa.Basis
	dim   int
}

var _ models.Model = (*weightedModel)(nil)

type weightedState struct {
	IDF       IDF             `json:"idf"`
	UseIDF    bool            `json:"use_idf"`
	L2        bool            `json:"l2"`
	Basis     *lsa.Basis      `json:"basis,omitempty"`
	Dim       int             `json:"dim,omitempty"`
	InnerMeta models.Meta     `json:"inner_meta"`
	Inner     json.RawMessage `json:"inner"`
}

func (w *weightedModel) Meta() models.Meta {
	m := w.model.Meta()
	m.Kind = w.name
	m.Params = w.params
	m.Dim = w.dim
	return m
}

func (w *weightedModel) MarshalState() ([]byte, error) {
	inner, err := w.model.MarshalState()
	if err != nil {
		return nil, err
	}
	return json.Marshal(weightedState{IDF: w.idf, UseIDF: w.useIDF, L2: w.l2, InnerMeta: w.model.Meta(), Basis: w.basis, Dim: w.dim, Inner: inner})
}

func (w *weightedModel) Annotate(ctx context.Context, b *mil.Bag, mode models.Mode) (models.Annotation, error) {
	if err := b.Validate(w.dim, 0); err != nil {
		return models.Annotation{}, fmt.Errorf("%w: %w", models.ErrBadInput, err)
	}
	c := *b
	w.weigh(&c)
	w.project(&c)
	return w.model.Annotate(ctx, &c, mode)
}

// weigh replaces b's instances (b is a copy) by their weighted sparse
// form.
func (w *weightedModel) weigh(b *mil.Bag) {
	vs := sparseOf(b)
	ws := make([]mil.SparseVec, len(vs))
	for i, v := range vs {
		ws[i] = w.idf.Apply(v, w.useIDF, w.l2)
	}
	b.Sparse, b.Instances = ws, nil
}

// project replaces the weighted passages of b (weigh's) by their
// coordinates in the basis, when there is one.
func (w *weightedModel) project(b *mil.Bag) {
	if w.basis == nil {
		return
	}
	b.Instances = make([][]float64, len(b.Sparse))
	for i, v := range b.Sparse {
		b.Instances[i] = w.basis.Project(v)
	}
	b.Sparse = nil
}

// sparseOf returns b's instances in sparse form: a text featurizer's bags
// are sparse already; a dense bag (vectors from the sender) is converted,
// so the kind takes any bag its inner kind would.
func sparseOf(b *mil.Bag) []mil.SparseVec {
	if b.Sparse != nil {
		return b.Sparse
	}
	out := make([]mil.SparseVec, len(b.Instances))
	for i, x := range b.Instances {
		out[i] = mil.SparseOf(x)
	}
	return out
}

// weighAll returns d with every passage weighted (bags copied), what
// the basis is fitted on and projects.
func (w *weightedModel) weighAll(d *mil.Dataset) *mil.Dataset {
	out := &mil.Dataset{Name: d.Name, Classes: d.Classes, Dim: d.Dim, Bags: make([]mil.Bag, len(d.Bags))}
	for i, b := range d.Bags {
		w.weigh(&b)
		out.Bags[i] = b
	}
	return out
}

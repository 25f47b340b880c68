package baseline

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// DummyKind returns the dummy classifier ("dummy") of Pham et al. (2017,
// Sections 6.2 and 6.4). It has no parameters.
func DummyKind() models.Kind {
	return models.Kind{
		Name:          "dummy",
		Description:   "most common training class for every instance; bag scores are training label frequencies (lower bound, Pham et al. 2017)",
		InstanceLevel: true,
		// It reads no feature, so a sparse bag is as good as a dense one.
		Sparse: true,
		Params: []models.ParamSpec{}, // none: the counts have nothing to tune
		Fit: func(ctx context.Context, d *mil.Dataset, o models.FitOptions) (models.Model, error) {
			return FitDummy(ctx, d, o)
		},
		Decode: func(meta models.Meta, state []byte) (models.Model, error) { return DecodeDummy(meta, state) },
	}
}

var _ models.Model = (*Dummy)(nil)

// Dummy ignores the features. Safe for concurrent use.
type Dummy struct {
	meta models.Meta
	st   dummyState
}

type dummyState struct {
	// ClassFreq[c] is the share of training instances of class c (from
	// the ground-truth instance labels; from the bag labels when the data
	// set has none, each bag counting once per class).
	ClassFreq []float64 `json:"class_freq"`
	// BagFreq[c] is the share of labeled training bags whose label has c.
	BagFreq []float64 `json:"bag_freq"`
	// Majority is the most common class (the lowest index on ties).
	Majority int `json:"majority"`
}

// FitDummy counts class frequencies in the training set.
func FitDummy(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (*Dummy, error) {
	nc := len(train.Classes)
	if nc == 0 {
		return nil, fmt.Errorf("dummy: dataset has no classes")
	}
	st := dummyState{ClassFreq: make([]float64, nc), BagFreq: make([]float64, nc)}
	instances, bags, bagLabels := 0, 0, 0
	for i := range train.Bags {
		b := &train.Bags[i]
		if err := b.Validate(train.Dim, nc); err != nil {
			return nil, fmt.Errorf("dummy: %w: %w", models.ErrBadInput, err)
		}
		for _, y := range b.InstanceLabels {
			if y != mil.Unlabeled {
				st.ClassFreq[y]++
				instances++
			}
		}
		if b.Labeled() {
			bags++
			for _, c := range b.Labels {
				st.BagFreq[c]++
				bagLabels++
			}
		}
	}
	if bags > 0 {
		for c := range st.BagFreq {
			st.BagFreq[c] /= float64(bags)
		}
	}
	switch {
	case instances > 0:
		for c := range st.ClassFreq {
			st.ClassFreq[c] /= float64(instances)
		}
	case bagLabels > 0:
		// No instance ground truth: the best available guess of the
		// instance class distribution is the bag label distribution.
		for c := range st.ClassFreq {
			st.ClassFreq[c] = st.BagFreq[c] * float64(bags) / float64(bagLabels)
		}
	default:
		return nil, fmt.Errorf("dummy: %w: no instance or bag labels to count", models.ErrBadInput)
	}
	for c, f := range st.ClassFreq {
		if f > st.ClassFreq[st.Majority] {
			st.Majority = c
		}
	}
	if opt.Progress != nil {
		opt.Progress(1, 1)
	}
	return &Dummy{meta: models.Meta{Kind: "dummy", Classes: train.Classes, Dim: train.Dim, InstanceLevel: true}, st: st}, nil
}

// DecodeDummy rebuilds a model from MarshalState output.
func DecodeDummy(meta models.Meta, state []byte) (*Dummy, error) {
	var st dummyState
	if err := json.Unmarshal(state, &st); err != nil {
		return nil, fmt.Errorf("dummy: %w", err)
	}
	nc := len(meta.Classes)
	if len(st.ClassFreq) != nc || len(st.BagFreq) != nc || st.Majority < 0 || st.Majority >= nc {
		return nil, fmt.Errorf("dummy: state does not match %d classes", nc)
	}
	return &Dummy{meta: meta, st: st}, nil
}

// Meta describes the model.
func (m *Dummy) Meta() models.Meta { return m.meta }

// MarshalState encodes the frequencies.
func (m *Dummy) MarshalState() ([]byte, error) { return json.Marshal(m.st) }

// Annotate labels every instance with the most common training class
// (inductive) or with the bag label's most common training class
// (transductive). Instance scores are the class frequencies (restricted to
// the bag label and renormalised in transductive mode). The predicted bag
// label is the union of the instance labels; the bag scores are the
// training bag label frequencies, the paper's f_dummy(X, c) for the ranking
// measures (0 outside the known label in transductive mode).
func (m *Dummy) Annotate(ctx context.Context, b *mil.Bag, mode models.Mode) (models.Annotation, error) {
	nc := len(m.meta.Classes)
	if err := checkBag(b, m.meta.Dim, nc, mode); err != nil {
		return models.Annotation{}, err
	}
	scores := append([]float64(nil), m.st.ClassFreq...)
	bagScores := append([]float64(nil), m.st.BagFreq...)
	y := m.st.Majority
	if mode == models.Transductive {
		restrict(scores, b.Labels)
		y = b.Labels[0]
		for _, c := range b.Labels {
			if scores[c] > scores[y] {
				y = c
			}
		}
		keep := make([]float64, nc)
		for _, c := range b.Labels {
			keep[c] = bagScores[c]
		}
		bagScores = keep
	}
	a := models.Annotation{
		InstanceLabels: make([]int, b.Len()),
		InstanceScores: make([][]float64, b.Len()),
		BagLabels:      []int{y},
		BagScores:      bagScores,
	}
	for i := range b.Len() {
		a.InstanceLabels[i] = y
		a.InstanceScores[i] = append([]float64(nil), scores...)
	}
	return a, nil
}

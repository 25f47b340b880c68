package models

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// TestDataFor checks that a kind without a sparse path gets dense bags and
// one with it the data unchanged (catches a kind receiving Sparse bags it
// would read as empty, or a sparse kind paying for a dense copy).
func TestDataFor(t *testing.T) {
	d := &mil.Dataset{Name: "s", Classes: []string{"p"}, Dim: 3, Bags: []mil.Bag{
		{ID: "a", Sparse: []mil.SparseVec{{Idx: []int32{1}, Val: []float64{2}}}, Labels: []int{0}},
	}}
	if got := (Kind{Sparse: true}).dataFor(d); got != d {
		t.Fatal("a sparse kind got a copy")
	}
	got := (Kind{}).dataFor(d)
	if got.IsSparse() || len(got.Bags[0].Instances) != 1 || got.Bags[0].Instances[0][1] != 2 {
		t.Fatalf("dense kind got %+v", got.Bags[0])
	}
}

// TestBagFor: a kind without a sparse path gets a sparse bag dense, a
// sparse kind gets it as it is, and a dense bag is never copied. Catches a
// model that reads Instances only handed a sparse bag, or densifying for a
// sparse kind.
func TestBagFor(t *testing.T) {
	sp := &mil.Bag{ID: "a", Sparse: []mil.SparseVec{{Idx: []int32{1}, Val: []float64{2}}, {Idx: []int32{}, Val: []float64{}}}, Labels: []int{0}}
	dn := &mil.Bag{ID: "d", Instances: [][]float64{{0, 2, 0}}}
	for _, c := range []struct {
		name      string
		kind      Kind
		in        *mil.Bag
		same      bool
		wantDense [][]float64
	}{
		{"sparse kind, sparse bag", Kind{Sparse: true}, sp, true, nil},
		{"sparse kind, dense bag", Kind{Sparse: true}, dn, true, nil},
		{"dense kind, dense bag", Kind{}, dn, true, nil},
		{"dense kind, sparse bag", Kind{}, sp, false, [][]float64{{0, 2, 0}, {0, 0, 0}}},
	} {
		got := c.kind.bagFor(c.in, 3)
		if (got == c.in) != c.same {
			t.Errorf("%s: returned the bag itself %v, want %v", c.name, got == c.in, c.same)
		}
		if c.same {
			continue
		}
		if got.Sparse != nil || !reflect.DeepEqual(got.Instances, c.wantDense) || !reflect.DeepEqual(got.Labels, c.in.Labels) || got.ID != c.in.ID {
			t.Errorf("%s: got %+v, want dense %v", c.name, got, c.wantDense)
		}
		if c.in.Sparse == nil || c.in.Instances != nil {
			t.Errorf("%s: the input bag changed: %+v", c.name, c.in)
		}
	}
}

// seenModel records the bags it is asked to annotate; as a FeatureMapper
// (mapper true) it records those of AnnotateMapped too.
type seenModel struct {
	meta Meta
	seen *[]*mil.Bag
}

func (m seenModel) Meta() Meta                    { return m.meta }
func (m seenModel) MarshalState() ([]byte, error) { return json.Marshal(m.meta.Dim) }
func (m seenModel) Annotate(_ context.Context, b *mil.Bag, _ Mode) (Annotation, error) {
	*m.seen = append(*m.seen, b)
	return Annotation{BagLabels: []int{}, BagScores: []float64{0}}, nil
}

type seenMapper struct{ seenModel }

func (m seenMapper) FeatureSpace() string                       { return "seen" }
func (m seenMapper) MapInstance(x []float64) ([]float64, error) { return x, nil }
func (m seenMapper) AnnotateMapped(ctx context.Context, b *mil.Bag, _ [][]float64, mode Mode) (Annotation, error) {
	return m.Annotate(ctx, b, mode)
}

// TestRegistryDensifies: a Registry's kind without a sparse path fits on
// dense data and its models, fitted or decoded, annotate a sparse bag as
// its dense copy (through Annotate and, for a FeatureMapper, through
// AnnotateMapped); a warm start reaches Fit unwrapped; a kind with a
// sparse path gets the data, the bags and its own model unchanged. Catches
// a caller left to densify, which is how a sparse bag came to "look empty"
// to a dense kind.
func TestRegistryDensifies(t *testing.T) {
	sparse := &mil.Dataset{Name: "s", Classes: []string{"p"}, Dim: 3, Bags: []mil.Bag{
		{ID: "a", Sparse: []mil.SparseVec{{Idx: []int32{1}, Val: []float64{2}}}, Labels: []int{0}},
	}}
	bag := &mil.Bag{ID: "q", Sparse: []mil.SparseVec{{Idx: []int32{0, 2}, Val: []float64{1, 3}}}}
	dense := [][]float64{{1, 0, 3}}
	for _, c := range []struct {
		name           string
		sparsePath     bool
		mapper         bool
		wantDenseInput bool
	}{
		{"dense kind", false, false, true},
		{"dense kind, feature mapper", false, true, true},
		{"sparse kind", true, false, false},
		{"sparse kind, feature mapper", true, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var seen []*mil.Bag
			var trained *mil.Dataset
			var warm Model
			newModel := func() Model {
				m := seenModel{meta: Meta{Kind: "k", Dim: 3, Classes: []string{"p"}}, seen: &seen}
				if c.mapper {
					return seenMapper{m}
				}
				return m
			}
			r := NewRegistry(Kind{Name: "k", Sparse: c.sparsePath, Params: []ParamSpec{},
				Fit: func(_ context.Context, d *mil.Dataset, opt FitOptions) (Model, error) {
					trained, warm = d, opt.Warm
					return newModel(), nil
				},
				Decode: func(Meta, []byte) (Model, error) { return newModel(), nil },
			})
			k, err := r.Lookup("k")
			if err != nil {
				t.Fatal(err)
			}
			fitted, err := k.Fit(t.Context(), sparse, FitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if trained.IsSparse() == c.wantDenseInput {
				t.Errorf("Fit got sparse data %v, want %v", trained.IsSparse(), !c.wantDenseInput)
			}
			if _, err := k.Fit(t.Context(), sparse, FitOptions{Warm: fitted}); err != nil {
				t.Fatal(err)
			}
			if _, wrapped := warm.(interface{ Unwrap() Model }); wrapped || warm == nil {
				t.Errorf("the warm start reached Fit as %T, want the kind's own model", warm)
			}
			blob, err := Encode(fitted)
			if err != nil {
				t.Fatal(err)
			}
			decoded, err := r.Decode(blob)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []Model{fitted, decoded} {
				if _, ok := m.(FeatureMapper); ok != c.mapper {
					t.Errorf("%T: a FeatureMapper %v, want %v", m, ok, c.mapper)
				}
				if _, wrapped := m.(interface{ Unwrap() Model }); wrapped != c.wantDenseInput {
					t.Errorf("%T: wrapped %v, want %v", m, wrapped, c.wantDenseInput)
				}
				seen = nil
				if _, err := m.Annotate(t.Context(), bag, Inductive); err != nil {
					t.Fatal(err)
				}
				if fm, ok := m.(FeatureMapper); ok {
					if _, err := fm.AnnotateMapped(t.Context(), bag, nil, Inductive); err != nil {
						t.Fatal(err)
					}
				}
				for _, got := range seen {
					if c.wantDenseInput && (got.Sparse != nil || !reflect.DeepEqual(got.Instances, dense) || got.ID != bag.ID) {
						t.Errorf("%T annotated %+v, want the dense %v", m, got, dense)
					}
					if !c.wantDenseInput && got != bag {
						t.Errorf("%T annotated a copy of the sparse bag", m)
					}
				}
				if want := 1 + map[bool]int{true: 1}[c.mapper]; len(seen) != want {
					t.Errorf("%T: %d bags annotated, want %d", m, len(seen), want)
				}
			}
		})
	}
}

package modeltest

import (
	"context"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

func TestSeq(t *testing.T) {
	for _, tc := range []struct {
		lo, hi int
		want   []int
	}{{0, 3, []int{0, 1, 2}}, {5, 7, []int{5, 6}}, {4, 4, []int{}}} {
		if got := Seq(tc.lo, tc.hi); !slices.Equal(got, tc.want) {
			t.Errorf("Seq(%d, %d) = %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestNonNegative(t *testing.T) {
	ds := &mil.Dataset{Dim: 2, Bags: []mil.Bag{{Instances: [][]float64{{-3, 0.5}, {-1, 2}}}}}
	out := NonNegative(ds)
	want := [][]float64{{2, 1.5}, {0, 3}}
	for j, x := range out.Bags[0].Instances {
		if !slices.Equal(x, want[j]) {
			t.Errorf("instance %d = %v, want %v", j, x, want[j])
		}
	}
	if ds.Bags[0].Instances[0][0] != -3 {
		t.Error("NonNegative modified its input")
	}
}

// signModel labels an instance 1 when its first feature is positive, and
// records whether it was shown a bag label set.
type signModel struct{ sawLabels bool }

func (m *signModel) Meta() models.Meta             { return models.Meta{} }
func (m *signModel) MarshalState() ([]byte, error) { return nil, nil }
func (m *signModel) Annotate(_ context.Context, b *mil.Bag, _ models.Mode) (models.Annotation, error) {
	m.sawLabels = m.sawLabels || b.Labels != nil
	var a models.Annotation
	for _, x := range b.Instances {
		l := 0
		if x[0] > 0 {
			l = 1
		}
		a.InstanceLabels = append(a.InstanceLabels, l)
	}
	return a, nil
}

func TestInductiveAccuracy(t *testing.T) {
	bags := []mil.Bag{
		{ID: "a", Labels: []int{0, 1}, Instances: [][]float64{{1}, {-1}, {2}}, InstanceLabels: []int{1, 0, 0}},
		{ID: "b", Labels: []int{1}, Instances: [][]float64{{3}}, InstanceLabels: []int{1}},
	}
	m := &signModel{}
	if got := InductiveAccuracy(t, m, bags); got != 0.75 {
		t.Errorf("accuracy %v, want 0.75 (3 of 4 instances)", got)
	}
	if m.sawLabels {
		t.Error("the model was shown the bag labels")
	}
	if bags[0].Labels == nil {
		t.Error("InductiveAccuracy cleared the caller's labels")
	}
}

package mil

import (
	"errors"
	"math"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := [][]float64{{1, 2}, {3, 4}}
	tests := []struct {
		name    string
		bag     Bag
		dim     int
		classes int
		want    error
	}{
		{name: "valid", bag: Bag{ID: "a", Instances: ok, Labels: []int{0, 2}}, dim: 2, classes: 3},
		{name: "valid unlabeled", bag: Bag{ID: "a", Instances: ok}, dim: 2, classes: 3},
		{name: "no checks", bag: Bag{ID: "a", Instances: [][]float64{{1}, {1, 2, 3}}}, dim: 0, classes: 0},
		{name: "empty", bag: Bag{ID: "a"}, dim: 2, want: ErrEmptyBag},
		{name: "dimension", bag: Bag{ID: "a", Instances: [][]float64{{1, 2}, {3}}}, dim: 2, want: ErrDimension},
		{name: "nan", bag: Bag{ID: "a", Instances: [][]float64{{1, math.NaN()}}}, dim: 2, want: ErrNonFinite},
		{name: "inf", bag: Bag{ID: "a", Instances: [][]float64{{math.Inf(-1), 0}}}, dim: 2, want: ErrNonFinite},
		{name: "label too large", bag: Bag{ID: "a", Instances: ok, Labels: []int{3}}, dim: 2, classes: 3, want: ErrLabelRange},
		{name: "negative label", bag: Bag{ID: "a", Instances: ok, Labels: []int{-1}}, dim: 2, classes: 3, want: ErrLabelRange},
		{name: "duplicate label", bag: Bag{ID: "a", Instances: ok, Labels: []int{1, 1}}, dim: 2, classes: 3, want: ErrLabelOrder},
		{name: "unsorted labels", bag: Bag{ID: "a", Instances: ok, Labels: []int{2, 1}}, dim: 2, classes: 3, want: ErrLabelOrder},
		{name: "instance labels short", bag: Bag{ID: "a", Instances: ok, InstanceLabels: []int{0}}, dim: 2, classes: 3, want: ErrInstanceMeta},
		{name: "instance label range", bag: Bag{ID: "a", Instances: ok, InstanceLabels: []int{0, 5}}, dim: 2, classes: 3, want: ErrLabelRange},
		{name: "instance label unknown", bag: Bag{ID: "a", Instances: ok, InstanceLabels: []int{Unlabeled, 1}}, dim: 2, classes: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.bag.Validate(tc.dim, tc.classes)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDatasetHelpers(t *testing.T) {
	d := &Dataset{Name: "d", Classes: []string{"x", "y"}, Dim: 1, Bags: []Bag{
		{ID: "0", Instances: [][]float64{{1}, {2}}, Labels: []int{}, InstanceLabels: []int{0, 1}},
		{ID: "1", Instances: [][]float64{{3}}, InstanceLabels: []int{1}},
		{ID: "2", Instances: [][]float64{{4}}, InstanceLabels: []int{Unlabeled}},
	}}
	if got := d.NumInstances(); got != 4 {
		t.Errorf("NumInstances = %d, want 4", got)
	}
	if d.HasInstanceLabels() {
		t.Error("HasInstanceLabels = true with an unlabeled instance")
	}
	s := d.Subset([]int{1, 0})
	if len(s.Bags) != 2 || s.Bags[0].ID != "1" || s.Bags[1].ID != "0" || s.Dim != 1 || len(s.Classes) != 2 {
		t.Errorf("Subset = %+v", s)
	}
	if !s.HasInstanceLabels() {
		t.Error("HasInstanceLabels = false for fully labeled subset")
	}
	if !d.Bags[0].Labeled() || d.Bags[1].Labeled() {
		t.Error("Labeled: empty non-nil set is labeled, nil is not")
	}
	if (&Dataset{}).HasInstanceLabels() {
		t.Error("empty dataset has no instance labels")
	}
}

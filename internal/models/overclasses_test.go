package models

import (
	"reflect"
	"testing"
)

// TestOverClasses: the bag labels and scores of implicit classes (after the
// first q) are dropped and the rest kept, the input is not modified, and
// instance labels stay. Catches an off-by-one that drops a data class or
// keeps the implicit one (a Hamming loss over the wrong number of classes),
// and a truncation writing into the caller's slices.
func TestOverClasses(t *testing.T) {
	a := Annotation{InstanceLabels: []int{2, 0}, BagLabels: []int{0, 2}, BagScores: []float64{0.9, 0.1, 0.8}}
	cases := []struct {
		q    int
		want Annotation
	}{
		{2, Annotation{InstanceLabels: []int{2, 0}, BagLabels: []int{0}, BagScores: []float64{0.9, 0.1}}},
		{3, a},
		{-1, a},
	}
	for _, c := range cases {
		if got := a.OverClasses(c.q); !reflect.DeepEqual(got, c.want) {
			t.Errorf("q=%d: %+v, want %+v", c.q, got, c.want)
		}
	}
	if !reflect.DeepEqual(a.BagLabels, []int{0, 2}) || len(a.BagScores) != 3 {
		t.Errorf("input modified: %+v", a)
	}
	m := Meta{Classes: []string{"a", "b", "unknown"}, ImplicitClasses: []string{"unknown"}}
	if got := m.DataClasses(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("DataClasses %v", got)
	}
	if got := (Meta{Classes: []string{"a"}, ImplicitClasses: []string{"x", "y"}}).DataClasses(); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("malformed metadata: DataClasses %v", got)
	}
}

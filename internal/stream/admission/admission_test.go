package admission

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/baseline"
	"github.com/mimlstream/mimlstream/internal/models/orlr"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestReason checks the classification: the model contract's input errors
// on top of the wire format's, with the same precedence as before it moved
// out of the annotator (a label set too large wins over a mil error, a mil
// error over a generic bad input).
func TestReason(t *testing.T) {
	cases := []struct {
		err  error
		want wire.Reason
		ok   bool
	}{
		{fmt.Errorf("x: %w", models.ErrLabelSetTooLarge), wire.ReasonLabelSetTooLarge, true},
		{fmt.Errorf("x: %w", models.ErrBadInput), wire.ReasonBadInput, true},
		{fmt.Errorf("x: %w", mil.ErrDimension), wire.ReasonDimension, true},
		{fmt.Errorf("x: %w %w", models.ErrBadInput, mil.ErrNonFinite), wire.ReasonNonFinite, true},
		{fmt.Errorf("x: %w %w", mil.ErrDimension, models.ErrLabelSetTooLarge), wire.ReasonLabelSetTooLarge, true},
		{wire.Reject(wire.ReasonVocabulary, models.ErrBadInput), wire.ReasonVocabulary, true},
		{fmt.Errorf("redis down"), "", false},
		{nil, "", false},
	}
	for _, c := range cases {
		r, ok := Reason(c.err)
		if r != c.want || ok != c.ok {
			t.Errorf("Reason(%v) = %q,%v want %q,%v", c.err, r, ok, c.want, c.ok)
		}
	}
}

func TestTargetCheck(t *testing.T) {
	target := Target{Model: "model v1", Dim: 2, Classes: []string{"a", "b", "c"}, MaxLabels: 2}
	bag := func(dim int, classes []string, labels []int) *wire.BagMessage {
		return &wire.BagMessage{ID: "b", Dim: dim, Classes: classes, Labels: labels}
	}
	cases := []struct {
		name string
		bm   *wire.BagMessage
		want wire.Reason // "" accepted
	}{
		{"unlabeled", bag(2, nil, nil), ""},
		{"labeled", bag(2, target.Classes, []int{0, 2}), ""},
		{"negative", bag(2, target.Classes, []int{}), ""},
		{"dimension", bag(3, target.Classes, []int{0}), wire.ReasonDimension},
		{"dimension unlabeled", bag(1, nil, nil), wire.ReasonDimension},
		{"vocabulary", bag(2, []string{"a", "b"}, []int{0}), wire.ReasonVocabulary},
		{"vocabulary order", bag(2, []string{"b", "a", "c"}, []int{0}), wire.ReasonVocabulary},
		{"label cap", bag(2, target.Classes, []int{0, 1, 2}), wire.ReasonLabelSetTooLarge},
		// An unlabeled bag's vocabulary is not read.
		{"unlabeled other vocabulary", bag(2, []string{"x"}, nil), ""},
	}
	for _, c := range cases {
		err := target.Check(c.bm)
		got, _ := Reason(err)
		if got != c.want {
			t.Errorf("%s: %v (reason %q), want %q", c.name, err, got, c.want)
		}
		if c.want == wire.ReasonLabelSetTooLarge && !errors.Is(err, models.ErrLabelSetTooLarge) {
			t.Errorf("%s: %v does not wrap models.ErrLabelSetTooLarge", c.name, err)
		}
	}
	if err := (Target{Dim: 2, Classes: target.Classes}).Check(bag(2, target.Classes, []int{0, 1, 2})); err != nil {
		t.Errorf("no cap: %v", err)
	}
}

// TestLabelCap reads the cap each kind declares: orlr's max_labels (default
// and set), the centroid test kind's (default 0: none), and none for a kind
// that does not declare it.
func TestLabelCap(t *testing.T) {
	cases := []struct {
		name   string
		kind   models.Kind
		params models.Params
		want   int
		fails  bool
	}{
		{"orlr default", orlr.Kind(), nil, 16, false},
		{"orlr set", orlr.Kind(), models.Params{"max_labels": "4"}, 4, false},
		{"orlr malformed", orlr.Kind(), models.Params{"max_labels": "four"}, 0, true},
		{"centroid default", streamtest.CentroidKind(), nil, 0, false},
		{"centroid set", streamtest.CentroidKind(), models.Params{"max_labels": "2"}, 2, false},
		{"no such parameter", baseline.DummyKind(), models.Params{"max_labels": "2"}, 0, false},
	}
	for _, c := range cases {
		got, err := LabelCap(c.kind, c.params)
		if got != c.want || (err != nil) != c.fails {
			t.Errorf("%s: %d, %v; want %d, error %v", c.name, got, err, c.want, c.fails)
		}
	}
	// The cap is the one the fit enforces: a bag one label over it fails
	// orlr's fit with ErrLabelSetTooLarge, a bag at it does not.
	ds := &mil.Dataset{Name: "t", Classes: []string{"a", "b", "c", "d"}, Dim: 1}
	for i := range 8 {
		ds.Bags = append(ds.Bags, mil.Bag{ID: fmt.Sprint(i), Instances: [][]float64{{0}, {1}, {2}, {3}}, Labels: []int{i % 4}})
	}
	params := models.Params{"max_labels": "2", "iters": "1", "msteps": "1"}
	limit, _ := LabelCap(orlr.Kind(), params)
	for _, n := range []int{limit, limit + 1} {
		ds.Bags[0].Labels = []int{0, 1, 2, 3}[:n]
		_, err := orlr.Kind().Fit(t.Context(), ds, models.FitOptions{Seed: 1, Params: params})
		if tooMany := errors.Is(err, models.ErrLabelSetTooLarge); tooMany != (n > limit) {
			t.Errorf("orlr fit with a bag of %d labels (cap %d): %v", n, limit, err)
		}
	}
}

// TestTargetImplicitAndEmpty covers the two checks a model with classes of
// its own needs: a bag over the data's vocabulary (without the model's
// implicit "unknown") is the model's vocabulary (the fault caught: every
// labeled bag dead-lettered once an unknown-class model is current), an
// implicit class that does not close Classes makes nothing implicit, and
// an empty label set is refused only where the kind cannot learn from one.
func TestTargetImplicitAndEmpty(t *testing.T) {
	full := []string{"a", "b", "unknown"}
	bag := func(classes []string, labels []int) *wire.BagMessage {
		return &wire.BagMessage{ID: "b", Dim: 2, Classes: classes, Labels: labels}
	}
	cases := []struct {
		name   string
		target Target
		bm     *wire.BagMessage
		want   wire.Reason
	}{
		{"data vocabulary", Target{Dim: 2, Classes: full, Implicit: []string{"unknown"}}, bag([]string{"a", "b"}, []int{1}), ""},
		{"full vocabulary", Target{Dim: 2, Classes: full, Implicit: []string{"unknown"}}, bag(full, []int{2}), ""},
		{"no implicit", Target{Dim: 2, Classes: full}, bag([]string{"a", "b"}, []int{1}), wire.ReasonVocabulary},
		{"implicit not closing", Target{Dim: 2, Classes: full, Implicit: []string{"a"}}, bag([]string{"b", "unknown"}, []int{0}), wire.ReasonVocabulary},
		{"shorter still", Target{Dim: 2, Classes: full, Implicit: []string{"unknown"}}, bag([]string{"a"}, []int{0}), wire.ReasonVocabulary},
		{"empty refused", Target{Dim: 2, Classes: full, NoEmptyLabels: true}, bag(full, []int{}), wire.ReasonLabels},
		{"empty accepted", Target{Dim: 2, Classes: full}, bag(full, []int{}), ""},
		{"unlabeled not empty", Target{Dim: 2, Classes: full, NoEmptyLabels: true}, bag(nil, nil), ""},
	}
	for _, c := range cases {
		got, _ := Reason(c.target.Check(c.bm))
		if got != c.want {
			t.Errorf("%s: reason %q, want %q", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		params models.Params
		want   bool
	}{{nil, false}, {models.Params{"unknown": "true"}, true}} {
		got, err := EmptyLabelSets(orlr.Kind(), c.params)
		if err != nil || got != c.want {
			t.Errorf("orlr %v: empty label sets %v (%v), want %v", c.params, got, err, c.want)
		}
	}
	if got, err := EmptyLabelSets(baseline.DummyKind(), nil); err != nil || !got {
		t.Errorf("a kind declaring nothing: %v (%v), want true", got, err)
	}
}

package orlr

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/modeltest"
	"github.com/mimlstream/mimlstream/internal/testsupport/synth"
)

// plantedUnknown draws blobs of five classes and makes the last one the
// unknown class: it is dropped from every bag label (bags made of it alone
// get an empty label set). With inVocabulary the data keep it as a class
// named "unknown"; otherwise the vocabulary has the four known classes and
// the unknown instances are unlabeled in the data. truth holds every
// instance's class, 4 for unknown.
func plantedUnknown(seed uint64, bags int, inVocabulary bool) (*mil.Dataset, [][]int) {
	g := synth.Blobs{Bags: bags, Classes: 5, Dim: 3, MaxInstances: 6, CentreScale: 3}
	d := g.Generate(rand.New(rand.NewPCG(seed, 3)))
	const unk = 4
	d.Classes = []string{"a", "b", "c", "d"}
	if inVocabulary {
		d.Classes = append(d.Classes, UnknownClass)
	}
	truth := make([][]int, len(d.Bags))
	for i := range d.Bags {
		b := &d.Bags[i]
		truth[i] = slices.Clone(b.InstanceLabels)
		b.Labels = slices.DeleteFunc(b.Labels, func(c int) bool { return c == unk })
		if !inVocabulary {
			for j, y := range b.InstanceLabels {
				if y == unk {
					b.InstanceLabels[j] = mil.Unlabeled
				}
			}
		}
	}
	return d, truth
}

// unknownScores annotates bags and returns the instance accuracy and the
// precision and recall of the class unk against truth.
func unknownScores(t *testing.T, m models.Model, d *mil.Dataset, idx []int, truth [][]int, unk int, mode models.Mode) (acc, prec, rec float64) {
	t.Helper()
	right, total, tp, predicted, actual := 0, 0, 0, 0, 0
	for _, i := range idx {
		q := mil.Bag{ID: d.Bags[i].ID, Instances: d.Bags[i].Instances}
		if mode == models.Transductive {
			q.Labels = d.Bags[i].Labels
		}
		a, err := m.Annotate(context.Background(), &q, mode)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(a.BagLabels, unk) || a.BagScores[unk] != 0 {
			t.Fatalf("bag %s: the unknown class is in the bag prediction (%v, score %v)", q.ID, a.BagLabels, a.BagScores[unk])
		}
		for j, y := range truth[i] {
			p := a.InstanceLabels[j]
			total++
			if p == y {
				right++
			}
			if p == unk {
				predicted++
			}
			if y == unk {
				actual++
				if p == unk {
					tp++
				}
			}
		}
	}
	return float64(right) / float64(total), float64(tp) / float64(predicted), float64(tp) / float64(actual)
}

// TestUnknownClassRecoversPlantedInstances plants instances of a class
// that no bag label names (some bags hold nothing else) and checks that
// unknown=true finds them on held-out bags (inductive) and on the training
// bags (transductive), whether the vocabulary has the class or the model
// appends it.
func TestUnknownClassRecoversPlantedInstances(t *testing.T) {
	for _, inVocabulary := range []bool{true, false} {
		t.Run(fmt.Sprintf("in vocabulary=%v", inVocabulary), func(t *testing.T) {
			d, truth := plantedUnknown(41, 300, inVocabulary)
			train, test := modeltest.Seq(0, 200), modeltest.Seq(200, 300)
			empty := 0
			for _, i := range train {
				if len(d.Bags[i].Labels) == 0 {
					empty++
				}
			}
			if empty == 0 {
				t.Fatal("no bag with an empty label set: the test does not cover them")
			}
			params := models.Params{"unknown": "true", "iters": "30"}
			m, err := Fit(context.Background(), d.Subset(train), models.FitOptions{Seed: 1, Params: params})
			if err != nil {
				t.Fatal(err)
			}
			classes := m.Meta().Classes
			if len(classes) != 5 || classes[4] != UnknownClass {
				t.Fatalf("model classes %q, want the four known classes then %q", classes, UnknownClass)
			}
			acc, prec, rec := unknownScores(t, m, d, test, truth, 4, models.Inductive)
			t.Logf("inductive: accuracy %.3f, unknown precision %.3f recall %.3f", acc, prec, rec)
			if acc < 0.9 || prec < 0.9 || rec < 0.9 {
				t.Errorf("inductive: accuracy %.3f, unknown precision %.3f, recall %.3f; want all >= 0.9", acc, prec, rec)
			}
			acc, prec, rec = unknownScores(t, m, d, train, truth, 4, models.Transductive)
			t.Logf("transductive: accuracy %.3f, unknown precision %.3f recall %.3f", acc, prec, rec)
			if acc < 0.9 || prec < 0.9 || rec < 0.9 {
				t.Errorf("transductive: accuracy %.3f, unknown precision %.3f, recall %.3f; want all >= 0.9", acc, prec, rec)
			}

			// Without the option: one error naming the count and the option.
			_, err = Fit(context.Background(), d.Subset(train), models.FitOptions{Seed: 1, Params: models.Params{"iters": "30"}})
			want := fmt.Sprintf("%d of the 200 labeled training bags", empty)
			if !errors.Is(err, models.ErrBadInput) || err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "unknown=true") {
				t.Errorf("fit without unknown=true: %v; want ErrBadInput naming %q and the option", err, want)
			}

			// The model survives serialization.
			blob, err := models.Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			back, err := models.NewRegistry(Kind()).Decode(blob)
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range test[:20] {
				for _, mode := range []models.Mode{models.Inductive, models.Transductive} {
					q := d.Bags[i]
					a1, err1 := m.Annotate(context.Background(), &q, mode)
					a2, err2 := back.Annotate(context.Background(), &q, mode)
					if err1 != nil || err2 != nil || !reflect.DeepEqual(a1, a2) {
						t.Fatalf("decoded model annotates bag %d differently (%v, %v)", i, err1, err2)
					}
				}
			}
		})
	}
}

// TestUnknownEmptyLabelTransductive: with an unknown class, a bag labeled
// with the empty set is annotated all unknown; without one it is bad input.
func TestUnknownEmptyLabelTransductive(t *testing.T) {
	d, _ := plantedUnknown(42, 80, true)
	m, err := Fit(context.Background(), d, models.FitOptions{Seed: 1, Params: models.Params{"unknown": "true", "iters": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	b := mil.Bag{ID: "e", Instances: [][]float64{{0, 0, 0}, {1, 2, 3}}, Labels: []int{}}
	a, err := m.Annotate(context.Background(), &b, models.Transductive)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.InstanceLabels, []int{4, 4}) || len(a.BagLabels) != 0 {
		t.Errorf("empty-label bag annotated %v / bag %v, want all unknown and no bag label", a.InstanceLabels, a.BagLabels)
	}
	for _, s := range a.InstanceScores {
		if s[4] != 1 {
			t.Errorf("instance scores %v, want certainty for unknown", s)
		}
	}
	for params, want := range map[string]bool{"true": true, "false": false} {
		if got, err := EmptyLabelSets(models.Params{"unknown": params}); err != nil || got != want {
			t.Errorf("EmptyLabelSets(unknown=%s) = %v, %v", params, got, err)
		}
	}
	plain, err := Fit(context.Background(), d, models.FitOptions{Seed: 1, Params: models.Params{"iters": "5"}})
	if err == nil {
		if _, err := plain.Annotate(context.Background(), &b, models.Transductive); !errors.Is(err, models.ErrBadInput) {
			t.Errorf("transductive empty label without unknown: %v, want ErrBadInput", err)
		}
	} else if !errors.Is(err, models.ErrBadInput) {
		t.Errorf("fit: %v", err)
	}
}

package orlr

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/baseline"
)

// novelScores is the instance accuracy over every instance (mean and std
// over folds) and the precision and recall of one class pooled over folds.
type novelScores struct {
	acc, std, prec, rec float64
}

// novelCV is cvAccuracy (same folds) that also pools the precision and
// recall of class unk. With transductive, it fits once on all bags and
// annotates them with their bag labels known.
func novelCV(t *testing.T, kind models.Kind, d *mil.Dataset, folds int, seed int64, params models.Params, unk int, transductive bool) novelScores {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 99))
	perm := rng.Perm(len(d.Bags))
	var accs []float64
	tp, predicted, actual := 0, 0, 0
	run := func(train, test []int, fitSeed int64, mode models.Mode) {
		m, err := kind.Fit(context.Background(), d.Subset(train), models.FitOptions{Seed: fitSeed, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		right, total := 0, 0
		for _, i := range test {
			q := mil.Bag{ID: d.Bags[i].ID, Instances: d.Bags[i].Instances}
			if mode == models.Transductive {
				q.Labels = d.Bags[i].Labels
			}
			a, err := m.Annotate(context.Background(), &q, mode)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Meta().Classes; !slices.Equal(got, d.Classes) {
				t.Fatalf("%s: model classes %q, data %q", kind.Name, got, d.Classes)
			}
			for j, y := range d.Bags[i].InstanceLabels {
				p := a.InstanceLabels[j]
				total++
				if p == y {
					right++
				}
				if p == unk {
					predicted++
					if y == unk {
						tp++
					}
				}
				if y == unk {
					actual++
				}
			}
		}
		accs = append(accs, 100*float64(right)/float64(total))
	}
	if transductive {
		all := perm
		run(all, all, seed, models.Transductive)
	} else {
		for f := range folds {
			var train, test []int
			for i, b := range perm {
				if i%folds == f {
					test = append(test, b)
				} else {
					train = append(train, b)
				}
			}
			run(train, test, seed+int64(f), models.Inductive)
		}
	}
	s := novelScores{prec: 100 * float64(tp) / float64(max(predicted, 1)), rec: 100 * float64(tp) / float64(actual)}
	if len(accs) > 1 {
		s.acc, s.std = meanStd(accs)
	} else {
		s.acc = accs[0]
	}
	return s
}

// TestNovelClassLetterFrost evaluates the unknown class on Pham et al.'s
// Letter Frost novel-class file (20 letters in the bag labels, four more
// merged into a class that no bag label names, loaded as "unknown"):
// 10-fold inductive instance accuracy over all instances, and the pooled
// precision and recall of "unknown", for ORed-LR with unknown=true, ORed-LR
// without it (novel letters forced into known classes), SLR trained on the
// true instance labels (unknown included) and Dummy; then transductive.
// Gated by ORLR_NOVEL=1 (about a minute):
//
//	ORLR_NOVEL=1 go test ./internal/models/orlr -run TestNovelClassLetterFrost -v
func TestNovelClassLetterFrost(t *testing.T) {
	if os.Getenv("ORLR_NOVEL") == "" {
		t.Skip("set ORLR_NOVEL=1 (about a minute)")
	}
	d := loadTestdata(t, "letter_frost_pham_novelclass/newlabels.mat")
	unk := slices.Index(d.Classes, UnknownClass)
	if unk != len(d.Classes)-1 {
		t.Fatalf("classes %q: the loader must name the novel class %q", d.Classes, UnknownClass)
	}
	rows := []struct {
		name   string
		kind   models.Kind
		params models.Params
	}{
		{"`orlr --param unknown=true`", Kind(), models.Params{"unknown": "true"}},
		{"`orlr` (novel letters forced into known classes)", Kind(), nil},
		{"`slr` (true instance labels, unknown included)", baseline.SLRKind(), nil},
		{"`dummy`", baseline.DummyKind(), nil},
	}
	got := map[string][2]novelScores{}
	t.Log("| model | inductive accuracy | unknown precision | unknown recall | transductive accuracy | unknown precision | unknown recall |")
	t.Log("|---|---|---|---|---|---|---|")
	for _, r := range rows {
		start := time.Now()
		ind := novelCV(t, r.kind, d, 10, 1, r.params, unk, false)
		tr := novelCV(t, r.kind, d, 10, 1, r.params, unk, true)
		got[r.name] = [2]novelScores{ind, tr}
		t.Logf("| %s | %.1f ± %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |  (%v)", r.name, ind.acc, ind.std, ind.prec, ind.rec,
			tr.acc, tr.prec, tr.rec, time.Since(start).Round(time.Millisecond))
	}
	withU, forced := got[rows[0].name], got[rows[1].name]
	// Without the class no instance can be called unknown; with it, most
	// novel letters must be found, and accuracy over all instances rises.
	if forced[0].rec != 0 {
		t.Errorf("orlr without unknown predicted the unknown class (recall %.1f)", forced[0].rec)
	}
	if withU[0].rec < 50 || withU[0].acc < forced[0].acc+5 {
		t.Errorf("unknown=true: accuracy %.1f (without: %.1f), unknown recall %.1f", withU[0].acc, forced[0].acc, withU[0].rec)
	}
}

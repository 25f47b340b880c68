package orlr

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// sparseMIML is a text-like MIML set: each instance belongs to one of
// three classes, marked by a class feature, over a background of a few
// random non-negative non-zeros; a bag's label set is the union of its
// instances' classes.
func sparseMIML(seed uint64) *mil.Dataset {
	r := rand.New(rand.NewPCG(seed, 13))
	const d, k = 40, 3
	ds := &mil.Dataset{Name: "sparse", Classes: []string{"a", "b", "c"}, Dim: d}
	for range 40 {
		var b mil.Bag
		seen := make([]bool, k)
		for range 2 + r.IntN(3) {
			x := make([]float64, d)
			c := r.IntN(k)
			seen[c] = true
			x[c] = 1 + r.Float64()
			for range 4 {
				x[k+r.IntN(d-k)] = r.Float64()
			}
			b.Sparse = append(b.Sparse, mil.SparseOf(x))
		}
		b.Labels = []int{}
		for c, ok := range seen {
			if ok {
				b.Labels = append(b.Labels, c)
			}
		}
		ds.Bags = append(ds.Bags, b)
	}
	return ds
}

// TestSparseMatchesDense is the differential test of ORed-LR's sparse
// design matrix against the dense one: on the same bags, sparse and
// densified, with the same parameters (exact and stochastic EM), the
// weights agree within 1e-9 and so do the annotations' instance scores.
// It catches an E-step reading the logits of the wrong rows, a stochastic
// M-step that copies the wrong rows of a sparse problem, bag offsets
// counted in the wrong design matrix, and a scaler applied differently.
func TestSparseMatchesDense(t *testing.T) {
	sp := sparseMIML(1)
	dn := sp.Densified()
	// select is given: without it the sparse fit would choose l2 by
	// inner CV and the dense one keep 2e-3. With select=cv both search,
	// on the same folds.
	for _, p := range []models.Params{
		{"scale": "unit", "select": "none"},
		{"scale": "none", "subset": "0.5", "iters": "15", "select": "none"},
		{"scale": "unit", "select": "cv"},
	} {
		t.Run(p["scale"]+"/"+p["select"], func(t *testing.T) {
			opt := models.FitOptions{Seed: 4, Params: p, Workers: 1}
			ms, err := Fit(context.Background(), sp, opt)
			if err != nil {
				t.Fatal(err)
			}
			md, err := Fit(context.Background(), dn, opt)
			if err != nil {
				t.Fatal(err)
			}
			for j := range md.lr.W {
				if math.Abs(ms.lr.W[j]-md.lr.W[j]) > 1e-9 {
					t.Fatalf("w[%d]: sparse %v, dense %v", j, ms.lr.W[j], md.lr.W[j])
				}
			}
			for i := range sp.Bags {
				as, err := ms.Annotate(context.Background(), &sp.Bags[i], models.Inductive)
				if err != nil {
					t.Fatal(err)
				}
				ad, err := md.Annotate(context.Background(), &dn.Bags[i], models.Inductive)
				if err != nil {
					t.Fatal(err)
				}
				for j := range ad.InstanceScores {
					for c := range ad.InstanceScores[j] {
						if math.Abs(as.InstanceScores[j][c]-ad.InstanceScores[j][c]) > 1e-9 {
							t.Fatalf("bag %d instance %d class %d: sparse %v, dense %v", i, j, c, as.InstanceScores[j][c], ad.InstanceScores[j][c])
						}
					}
				}
			}
		})
	}
}

// TestSparseDefaultScale checks that sparse data without a scale get unit
// norm (recorded in the model's parameters) and that the z-score, which
// would densify, is refused.
func TestSparseDefaultScale(t *testing.T) {
	sp := sparseMIML(2)
	m, err := Fit(context.Background(), sp, models.FitOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m.scaler == nil || m.scaler.Mode != "unit" || m.Meta().Params["scale"] != "unit" {
		t.Fatalf("scaler %+v, params %v; want unit", m.scaler, m.Meta().Params)
	}
	if _, err := Fit(context.Background(), sp, models.FitOptions{Seed: 1, Params: models.Params{"scale": "zscore"}}); err == nil {
		t.Fatal("scale=zscore on sparse data: no error")
	}
}

package symil

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// sparseMIML is a small text-like MIML set: each of two classes has a
// topic feature in one instance of the bags carrying it, over a
// background of a few random non-negative non-zeros (about 10% density).
func sparseMIML(seed uint64) *mil.Dataset {
	r := rand.New(rand.NewPCG(seed, 11))
	const d = 50
	ds := &mil.Dataset{Name: "sparse", Classes: []string{"a", "b"}, Dim: d}
	for i := range 36 {
		b := mil.Bag{Labels: [][]int{{}, {0}, {1}, {0, 1}}[i%4]}
		for j := range 2 + r.IntN(4) {
			x := make([]float64, d)
			for range 5 {
				x[2+r.IntN(d-2)] = r.Float64()
			}
			for c := range 2 {
				if j == c && hasInt(b.Labels, c) {
					x[c] = 1 + r.Float64()
				}
			}
			b.Sparse = append(b.Sparse, mil.SparseOf(x))
		}
		ds.Bags = append(ds.Bags, b)
	}
	return ds
}

// TestSparseMatchesDense is the differential test of the sparse linear
// SGD against the dense one it stands in for: on the same bags, sparse and
// densified, with the same parameters, SyMIL gives the same weights and
// bias within 1e-9 and the same instance scores. It catches a sparse step
// that differs from the dense one (a missed cave or piece update, a decay
// applied twice, the averaged iterate of package sparsesgd misused), the
// bias column at the wrong index, and a random draw taken out of order.
// The unit-norm case is also what scale=auto means on sparse data.
func TestSparseMatchesDense(t *testing.T) {
	sp := sparseMIML(1)
	dn := sp.Densified()
	cases := []models.Params{
		{"kernel": "linear", "scale": "unit", "lambda": "0.5", "epochs": "20"},
		{"kernel": "linear", "scale": "maxabs", "epochs": "10", "C": "100"},
		{"kernel": "linear", "scale": "none", "bias": "false", "lambda": "1", "epochs": "20", "restarts": "2"},
	}
	for _, p := range cases {
		t.Run(p["scale"], func(t *testing.T) {
			opt := models.FitOptions{Seed: 2, Params: p, Workers: 1}
			ms, err := Fit(context.Background(), sp, opt)
			if err != nil {
				t.Fatal(err)
			}
			md, err := Fit(context.Background(), dn, opt)
			if err != nil {
				t.Fatal(err)
			}
			ss, sd := ms.State(), md.State()
			if ss.Scaler.Mode != sd.Scaler.Mode {
				t.Fatalf("scale %q, dense %q", ss.Scaler.Mode, sd.Scaler.Mode)
			}
			for c := range sd.Scorers {
				a, b := ss.Scorers[c], sd.Scorers[c]
				if len(a.W) != len(b.W) || math.Abs(a.B-b.B) > 1e-9 || ss.Lambda[c] != sd.Lambda[c] {
					t.Fatalf("class %d: sparse %d weights b %v λ %v, dense %d b %v λ %v", c, len(a.W), a.B, ss.Lambda[c], len(b.W), b.B, sd.Lambda[c])
				}
				for j := range b.W {
					if math.Abs(a.W[j]-b.W[j]) > 1e-9 {
						t.Fatalf("class %d w[%d]: sparse %v, dense %v", c, j, a.W[j], b.W[j])
					}
				}
			}
			for i := range sp.Bags {
				gs := ms.InstanceScores(&sp.Bags[i])
				gd := md.InstanceScores(&dn.Bags[i])
				for j := range gd {
					for c := range gd[j] {
						if math.Abs(gs[j][c]-gd[j][c]) > 1e-9 {
							t.Fatalf("bag %d instance %d class %d: sparse %v, dense %v", i, j, c, gs[j][c], gd[j][c])
						}
					}
				}
			}
		})
	}
}

// TestSparseDefaultsAndFallback checks that scale=auto on sparse data is
// unit norm (the z-score would densify) and that the Gram-matrix solvers,
// which have no sparse path, train on the densified bags and give the
// dense model.
func TestSparseDefaultsAndFallback(t *testing.T) {
	sp := sparseMIML(3)
	m, err := Fit(context.Background(), sp, models.FitOptions{Seed: 1, Params: models.Params{"lambda": "0.5", "epochs": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	if mode := m.State().Scaler.Mode; mode != ovr.ScaleUnit {
		t.Fatalf("scale=auto on sparse data chose %q, want unit", mode)
	}
	// kernel=auto would be rbf on the densified copy: the linear dual is
	// what the sparse input trains.
	p := models.Params{"kernel": "linear", "solver": "dcd", "lambda": "0.5", "scale": "unit", "restarts": "1", "cccp_iters": "3", "dcd_sweeps": "50"}
	ms, err := Fit(context.Background(), sp, models.FitOptions{Seed: 1, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	md, err := Fit(context.Background(), sp.Densified(), models.FitOptions{Seed: 1, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	for c := range md.State().Scorers {
		a, b := ms.State().Scorers[c], md.State().Scorers[c]
		for j := range b.W {
			if a.W[j] != b.W[j] {
				t.Fatalf("dcd class %d w[%d]: %v from sparse input, %v from dense", c, j, a.W[j], b.W[j])
			}
		}
	}
	if _, err := Fit(context.Background(), sp, models.FitOptions{Seed: 1, Params: models.Params{"scale": "zscore"}}); err == nil {
		t.Fatal("scale=zscore on sparse data: no error")
	}
}

package misvm

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// sparseToy is a small text-like MIML set: two classes, each carried by a
// "topic" feature present in one instance of the bags that have it, over a
// background of a few random non-zeros per instance (about 10% density),
// with non-negative tf-like values; one bag is unlabeled and one instance
// is all zero.
func sparseToy(seed uint64) *mil.Dataset {
	r := rand.New(rand.NewPCG(seed, 7))
	const d = 60
	ds := &mil.Dataset{Name: "sparse-toy", Classes: []string{"a", "b"}, Dim: d}
	for i := range 40 {
		b := mil.Bag{ID: string(rune('A' + i%26)), Labels: []int{}}
		switch i % 4 {
		case 1:
			b.Labels = []int{0}
		case 2:
			b.Labels = []int{1}
		case 3:
			b.Labels = []int{0, 1}
		}
		if i == 5 {
			b.Labels = nil
		}
		m := 2 + r.IntN(4)
		for j := range m {
			x := make([]float64, d)
			for range 6 {
				x[2+r.IntN(d-2)] = r.Float64()
			}
			for c := range 2 {
				if j == c && slicesContains(b.Labels, c) {
					x[c] = 1 + r.Float64()
				}
			}
			if i == 7 && j == 1 {
				clear(x)
			}
			b.Sparse = append(b.Sparse, mil.SparseOf(x))
		}
		ds.Bags = append(ds.Bags, b)
	}
	return ds
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestSparseMatchesDense is the differential test of the sparse path
// against the dense one it replaces: on the same data (sparse bags, and
// the same bags densified) with the same parameters, mi-SVM and MI-SVM give
// the same model, weights, biases, kernel coefficients and support vectors
// within 1e-9, and the same instance scores. It catches a slip in the
// scaled-weight and averaged-iterate bookkeeping of the sparse SGD (a
// missed T update, a rescale that forgets B, a wrong shrink), a bias put
// at the wrong index, a scaler or kernel computed differently on sparse
// rows, and a random draw taken in another order.
func TestSparseMatchesDense(t *testing.T) {
	sp := sparseToy(1)
	dn := sp.Densified()
	if !sp.IsSparse() || dn.IsSparse() {
		t.Fatal("fixture: want one sparse and one dense copy")
	}
	cases := []models.Params{
		{"kernel": "linear", "scale": "unit", "epochs": "20", "select": "none"},
		{"kernel": "linear", "scale": "maxabs", "C": "100", "epochs": "20", "select": "none"},
		{"kernel": "linear", "scale": "none", "bias": "false", "init": "bag", "epochs": "20", "select": "none"},
		{"kernel": "linear", "scale": "unit", "C": "1", "restarts": "2", "epochs": "20", "select": "none"},
		{"kernel": "linear", "scale": "unit", "epochs": "10", "select": "cv"},
		{"kernel": "rbf", "scale": "unit", "C": "10", "select": "none"},
		{"kernel": "rbf", "scale": "maxabs", "select": "cv"},
		{"kernel": "poly", "scale": "unit", "C": "10", "degree": "2", "select": "none"},
	}
	for _, kind := range []models.Kind{MISVMKind(), MiSVMKind()} {
		for _, p := range cases {
			t.Run(kind.Name+" "+paramString(p), func(t *testing.T) {
				opt := models.FitOptions{Seed: 3, Params: p, Workers: 1}
				ms, err := kind.Fit(context.Background(), sp, opt)
				if err != nil {
					t.Fatal(err)
				}
				md, err := kind.Fit(context.Background(), dn, opt)
				if err != nil {
					t.Fatal(err)
				}
				sameOVR(t, ms.(*ovr.Model).State(), md.(*ovr.Model).State(), sp.Dim)
				for i := range sp.Bags {
					as, err := ms.Annotate(context.Background(), &sp.Bags[i], models.Inductive)
					if err != nil {
						t.Fatal(err)
					}
					ad, err := md.Annotate(context.Background(), &dn.Bags[i], models.Inductive)
					if err != nil {
						t.Fatal(err)
					}
					for j := range as.InstanceScores {
						for c := range as.InstanceScores[j] {
							if d := math.Abs(as.InstanceScores[j][c] - ad.InstanceScores[j][c]); d > 1e-9 {
								t.Fatalf("bag %d instance %d class %d: sparse score %v, dense %v", i, j, c,
									as.InstanceScores[j][c], ad.InstanceScores[j][c])
							}
						}
					}
				}
			})
		}
	}
}

func paramString(p models.Params) string {
	s := ""
	for _, k := range []string{"kernel", "scale", "C", "bias", "init", "restarts", "select", "degree"} {
		if v, ok := p[k]; ok {
			s += k + "=" + v + " "
		}
	}
	return s
}

func sameOVR(t *testing.T, s, d ovr.State, dim int) {
	t.Helper()
	if s.Scaler.Mode != d.Scaler.Mode || !near(s.Scaler.Scale, d.Scaler.Scale) || !near(s.Scaler.Mean, d.Scaler.Mean) {
		t.Fatalf("scalers differ: sparse %+v, dense %+v", s.Scaler, d.Scaler)
	}
	for c := range d.Scorers {
		a, b := s.Scorers[c], d.Scorers[c]
		if (a.W == nil) != (b.W == nil) || !near(a.W, b.W) || math.Abs(a.B-b.B) > 1e-9 {
			t.Fatalf("class %d: sparse w %v b %v, dense w %v b %v", c, a.W, a.B, b.W, b.B)
		}
		if b.W != nil {
			continue
		}
		if a.SV != nil || len(a.SparseSV) != len(b.SV) || !near(a.Beta, b.Beta) || a.Gamma != b.Gamma || a.Kernel != b.Kernel {
			t.Fatalf("class %d: sparse %d SV (dense SV %v) beta %v gamma %v, dense %d SV beta %v gamma %v",
				c, len(a.SparseSV), a.SV != nil, a.Beta, a.Gamma, len(b.SV), b.Beta, b.Gamma)
		}
		for u := range b.SV {
			if !near(a.SparseSV[u].Dense(dim), b.SV[u]) {
				t.Fatalf("class %d support vector %d differs", c, u)
			}
		}
	}
}

func near(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

// TestSparseDefaults checks what sparse data changes when no parameter is
// given: the scaling is unit norm (not the dense default z-score, which
// would fill every zero), kernel=auto is linear (the kernel matrix is
// not proportional to the non-zeros) and C is chosen by inner CV (the
// model equals the one fitted with select=cv), and a centring scale is
// refused with an error rather than silently densifying.
func TestSparseDefaults(t *testing.T) {
	sp := sparseToy(2)
	m, err := MISVMKind().Fit(context.Background(), sp, models.FitOptions{Seed: 1, Params: models.Params{"epochs": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	st := m.(*ovr.Model).State()
	if st.Scaler.Mode != ovr.ScaleUnit {
		t.Fatalf("scale %q, want %q", st.Scaler.Mode, ovr.ScaleUnit)
	}
	for c, sc := range st.Scorers {
		if sc.W == nil {
			t.Fatalf("class %d: kernel scorer, want linear for sparse data", c)
		}
	}
	mcv, err := MISVMKind().Fit(context.Background(), sp, models.FitOptions{Seed: 1,
		Params: models.Params{"epochs": "5", "select": "cv", "kernel": "linear", "scale": "unit"}})
	if err != nil {
		t.Fatal(err)
	}
	mnone, err := MISVMKind().Fit(context.Background(), sp, models.FitOptions{Seed: 1,
		Params: models.Params{"epochs": "5", "select": "none", "kernel": "linear", "scale": "unit"}})
	if err != nil {
		t.Fatal(err)
	}
	sameOVR(t, st, mcv.(*ovr.Model).State(), sp.Dim)
	// On this toy inner CV picks a C other than 10⁴, so the default
	// model is not the select=none one.
	if near(mnone.(*ovr.Model).State().Scorers[0].W, st.Scorers[0].W) {
		t.Fatal("the default sparse model is the select=none one")
	}
	for _, s := range []string{"zscore", "zunit", "minmax"} {
		_, err := MISVMKind().Fit(context.Background(), sp, models.FitOptions{Seed: 1, Params: models.Params{"scale": s}})
		if err == nil {
			t.Errorf("scale=%s on sparse data: no error", s)
		}
	}
	// The dense data keep the dense defaults.
	md, err := MISVMKind().Fit(context.Background(), sp.Densified(), models.FitOptions{Seed: 1, Params: models.Params{"epochs": "5", "kernel": "linear"}})
	if err != nil {
		t.Fatal(err)
	}
	if mode := md.(*ovr.Model).State().Scaler.Mode; mode != "" {
		t.Fatalf("dense default scale %q, want z-score", mode)
	}
}

// TestSparseSGDRescale drives the sparse SGD through its rescaling branch
// (a tiny step offset makes a fall below the threshold many times) and
// through the w ← 0 step (η = 1 at the first step), and checks the
// result against the dense SGD: a rescale that forgot to divide B, or a
// reset that lost the running sum, would move the average.
func TestSparseSGDRescale(t *testing.T) {
	sp := sparseToy(3)
	dn := sp.Densified()
	for _, c := range []string{"1e-3", "0.5"} {
		p := models.Params{"kernel": "linear", "scale": "unit", "C": c, "epochs": "8000", "iters": "2", "restarts": "1", "select": "none"}
		opt := models.FitOptions{Seed: 5, Params: p, Workers: 1}
		ms, err := MiSVMKind().Fit(context.Background(), sp, opt)
		if err != nil {
			t.Fatal(err)
		}
		md, err := MiSVMKind().Fit(context.Background(), dn, opt)
		if err != nil {
			t.Fatal(err)
		}
		sameOVR(t, ms.(*ovr.Model).State(), md.(*ovr.Model).State(), sp.Dim)
	}
}

package baseline

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// TestSLRSparseMatchesDense fits SLR on sparse bags and on the same bags
// densified (scale=none, the sparse path's only transform): the two must
// give the same probabilities to rounding, inductive and transductive, and
// the sparse model must annotate dense bags alike.
func TestSLRSparseMatchesDense(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const dim, classes = 40, 3
	sparse := &mil.Dataset{Name: "s", Classes: []string{"a", "b", "c"}, Dim: dim}
	for b := range 30 {
		bag := mil.Bag{ID: string(rune('A' + b))}
		seen := map[int]bool{}
		for range 1 + r.IntN(4) {
			y := r.IntN(classes)
			seen[y] = true
			var v mil.SparseVec
			for j := range dim {
				// Class-dependent features: a few per class, and noise.
				if j%classes == y && r.Float64() < 0.5 || r.Float64() < 0.05 {
					v.Idx = append(v.Idx, int32(j))
					v.Val = append(v.Val, 0.5+r.Float64())
				}
			}
			bag.Sparse = append(bag.Sparse, v)
			bag.InstanceLabels = append(bag.InstanceLabels, y)
		}
		bag.Labels = []int{}
		for c := range classes {
			if seen[c] {
				bag.Labels = append(bag.Labels, c)
			}
		}
		sparse.Bags = append(sparse.Bags, bag)
	}
	dense := sparse.Densified()
	ctx := context.Background()
	opt := models.FitOptions{Params: models.Params{"l2": "0.01", "iters": "200"}}
	ms, err := FitSLR(ctx, sparse, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Params = models.Params{"l2": "0.01", "iters": "200", "scale": "none"}
	md, err := FitSLR(ctx, dense, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []models.Mode{models.Inductive, models.Transductive} {
		for i := range sparse.Bags {
			as, err := ms.Annotate(ctx, &sparse.Bags[i], mode)
			if err != nil {
				t.Fatal(err)
			}
			ad, err := md.Annotate(ctx, &dense.Bags[i], mode)
			if err != nil {
				t.Fatal(err)
			}
			asd, err := ms.Annotate(ctx, &dense.Bags[i], mode)
			if err != nil {
				t.Fatal(err)
			}
			for k := range as.InstanceScores {
				for c := range classes {
					if d := math.Abs(as.InstanceScores[k][c] - ad.InstanceScores[k][c]); d > 1e-6 {
						t.Fatalf("%s bag %d instance %d class %d: sparse %v, dense %v", mode, i, k, c, as.InstanceScores[k][c], ad.InstanceScores[k][c])
					}
					if as.InstanceScores[k][c] != asd.InstanceScores[k][c] && math.Abs(as.InstanceScores[k][c]-asd.InstanceScores[k][c]) > 1e-12 {
						t.Fatalf("sparse model on a dense bag: %v, on the sparse bag %v", asd.InstanceScores[k], as.InstanceScores[k])
					}
				}
			}
		}
	}
	if _, err := FitSLR(ctx, sparse, models.FitOptions{Params: models.Params{"scale": "zscore"}}); err == nil {
		t.Fatal("scale=zscore on sparse data accepted")
	}
	if got := ms.Meta().Params["scale"]; got != "none" {
		t.Fatalf("sparse model records scale=%s", got)
	}
}

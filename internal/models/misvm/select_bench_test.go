package misvm

import (
	"context"
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/models"
)

// BenchmarkSelectMusk1 fits MI-SVM and mi-SVM with the default kernel
// (rbf, select=cv) on nine tenths of Musk1, one outer fold's training set:
// the cost of one of the 50 fits of the 5×10-fold protocol, dominated by
// the inner cross-validation over C × γ.
func BenchmarkSelectMusk1(b *testing.B) {
	d, err := dataset.Load("../../../testdata/musk1/musk1.data")
	if err != nil {
		b.Fatal(err)
	}
	idx := make([]int, 0, len(d.Bags))
	for i := range d.Bags {
		if i%10 != 0 {
			idx = append(idx, i)
		}
	}
	train := d.Subset(idx)
	for _, k := range []models.Kind{MISVMKind(), MiSVMKind()} {
		for _, sel := range []string{"none", "cv"} {
			b.Run(k.Name+"/select="+sel, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := k.Fit(context.Background(), train, models.FitOptions{Seed: 1, Workers: 1, Params: models.Params{"select": sel}}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

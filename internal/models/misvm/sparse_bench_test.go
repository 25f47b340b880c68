package misvm

import (
	"context"
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/shareddata"
)

// BenchmarkSparseTREC1 fits mi-SVM and MI-SVM with the sparse defaults
// on all of TREC9 set 1 (400 bags, 3,224 instances, 66,552 features,
// about 17 non-zeros per instance): the cost of one fit of the 10-fold
// protocol's kind, in time and bytes allocated. It skips when the shared
// data directory is absent.
func BenchmarkSparseTREC1(b *testing.B) {
	d, err := dataset.Load(shareddata.Path(b, "trec9/sparse_trec1.data"))
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range []models.Kind{MISVMKind(), MiSVMKind()} {
		for _, sel := range []string{"none", "cv"} {
			b.Run(k.Name+"/select="+sel, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := k.Fit(context.Background(), d, models.FitOptions{Seed: 1, Workers: 1, Params: models.Params{"select": sel}}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/orlr"
)

// ORed-LR is the model the feature cache was made for: its RBF features
// are per-instance kernel vectors.
var _ models.FeatureMapper = (*orlr.Model)(nil)

// TestFeatureCacheWithKernelORLR serves a kernel ORed-LR model: the
// annotator fills the feature cache in Redis, and its annotations are those
// of the model itself.
func TestFeatureCacheWithKernelORLR(t *testing.T) {
	e := newEnv(t)
	ds, _ := mscv2Model(t)
	sub := ds.Subset(func() []int {
		idx := make([]int, 120)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}())
	m, err := orlr.Kind().Fit(context.Background(), sub, models.FitOptions{Seed: 1,
		Params: models.Params{"kernel": "rbf", "dict_frac": "0.2", "iters": "3", "msteps": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.(models.FeatureMapper).FeatureSpace() == "" {
		t.Fatal("kernel ORed-LR has no feature space")
	}
	blob, err := models.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	e.promote(blob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := e.tail(ctx)
	// A cache timeout for a loaded test machine: this test is about what
	// the cache holds, not about how long a Redis call may take.
	e.startAnnotator("a1", annotatorOpts{extra: []string{"--cache-timeout", "5s"}})
	pub := e.publisher(0.5)
	if _, err := pub.PublishDataset(ctx, sub, sub.Bags); err != nil {
		t.Fatal(err)
	}
	out.waitIDs(t, len(sub.Bags), 60*time.Second)
	keys, err := e.rdb.Keys(ctx, "{"+e.prefix+":features}:e:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	// One entry per distinct instance vector.
	distinct := map[string]bool{}
	for _, b := range sub.Bags {
		for _, x := range b.Instances {
			distinct[fmt.Sprint(x)] = true
		}
	}
	if len(keys) != len(distinct) {
		t.Errorf("%d feature cache entries for %d distinct instances", len(keys), len(distinct))
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	for i := range sub.Bags {
		b := sub.Bags[i]
		a := out.anns[b.ID][0]
		mode := models.Mode(a.Mode)
		if mode == models.Inductive {
			b.Labels = nil
		}
		want, err := m.Annotate(ctx, &b, mode)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.InstanceLabels, want.InstanceLabels) || !slices.Equal(a.BagLabels, want.BagLabels) {
			t.Fatalf("bag %s (%s): served %v/%v, model says %v/%v", b.ID, mode, a.InstanceLabels, a.BagLabels, want.InstanceLabels, want.BagLabels)
		}
	}
	t.Logf("%d bags annotated through %d cached kernel vectors", len(sub.Bags), len(keys))
}

package retrain

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/orlr"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestRetrainerEmptyLabelSets streams ORed-LR's training bags with a few
// explicitly empty label sets among them (every instance of no known
// class, planted at a point far from the three known classes).
//
// Without the unknown class the model cannot learn from such a bag: each is
// dead-lettered once on arrival with reason "labels" and a message naming
// the option, and the refits go on (the fault caught: one empty bag failing
// every refit, as it did before the stream checked it). With unknown=true
// they are training data: none is dead-lettered, the model's vocabulary is
// the stream's plus an implicit "unknown", bags over the stream's own
// vocabulary keep entering the window after that model is current (the
// fault caught: every labeled bag dead-lettered as another vocabulary), and
// the planted instances are annotated "unknown".
func TestRetrainerEmptyLabelSets(t *testing.T) {
	for _, unknown := range []bool{false, true} {
		t.Run(fmt.Sprintf("unknown=%v", unknown), func(t *testing.T) {
			h := newHarness(t)
			h.kinds = models.NewRegistry(orlr.Kind())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ds := streamtest.SmallDataset(90)
			empty := make([]mil.Bag, 6)
			for i := range empty {
				empty[i] = mil.Bag{ID: fmt.Sprintf("empty-%d", i), Labels: []int{},
					Instances: [][]float64{{10 + 0.1*float64(i), 10}, {10, 10 - 0.1*float64(i)}}}
			}
			h.writeBags(ctx, ds, append(slices.Clone(ds.Bags[:30]), empty[:3]...))
			h.writeBags(ctx, ds, append(slices.Clone(ds.Bags[30:60]), empty[3:]...))
			r := h.retrainer(func(c *RetrainerConfig) {
				c.Kind = orlr.Name
				c.Params = models.Params{"unknown": fmt.Sprint(unknown), "iters": "10"}
				c.DeadLetterTopic = h.topics.DeadLetter
				c.Every = 20
			})
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			streamtest.WaitFor(t, 30*time.Second, "first refit", func() bool { return len(r.Results()) >= 1 })
			h.writeBags(ctx, ds, ds.Bags[60:90])
			window := 90
			if unknown {
				window += len(empty)
			}
			streamtest.WaitFor(t, 30*time.Second, "refit on the new bags", func() bool { return len(r.Results()) >= 2 && r.Len() == window })
			for i, res := range r.Results() {
				if res.Version == "" || !res.Promoted {
					t.Errorf("refit %d: %+v", i, res)
				}
			}

			if !unknown {
				dead := h.deadLetters(ctx, len(empty), 10*time.Second)
				seen := map[string]bool{}
				for _, d := range dead {
					if seen[d.Key] {
						t.Errorf("%s dead-lettered twice", d.Key)
					}
					seen[d.Key] = true
					if d.Reason != wire.ReasonLabels || d.Stage != wire.StageRetrain || !strings.Contains(d.Error, "empty label set") || !strings.Contains(d.Error, "unknown=true") {
						t.Errorf("dead letter %+v, want reason labels naming the empty set and unknown=true", d)
					}
				}
				for _, b := range empty {
					if !seen[b.ID] {
						t.Errorf("%s not dead-lettered", b.ID)
					}
				}
			}

			blob, meta, err := h.reg.Current(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantClasses, wantImplicit := ds.Classes, []string(nil)
			if unknown {
				wantClasses, wantImplicit = append(slices.Clone(ds.Classes), orlr.UnknownClass), []string{orlr.UnknownClass}
			}
			if !slices.Equal(meta.Classes, wantClasses) || !slices.Equal(meta.ImplicitClasses, wantImplicit) {
				t.Fatalf("current model classes %v implicit %v, want %v and %v", meta.Classes, meta.ImplicitClasses, wantClasses, wantImplicit)
			}
			m, err := h.kinds.Decode(blob)
			if err != nil {
				t.Fatal(err)
			}
			a, err := m.Annotate(ctx, &mil.Bag{ID: "q", Instances: [][]float64{{10, 10}, {0, 0}}}, models.Inductive)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{meta.Classes[a.InstanceLabels[0]], meta.Classes[a.InstanceLabels[1]]}
			if unknown && (got[0] != orlr.UnknownClass || got[1] != "a") {
				t.Errorf("planted instance and class-a instance annotated %v, want [unknown a]", got)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

package retrain

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestRetrainerRecordsFeaturizer: a window of media bags (most of one
// featurizer, a few of another) is fitted on the majority's bags only, and
// the version stored says which featurizer made them; once that version
// is current, the window's bags of the other featurizer and a later one
// are dead-lettered with reason featurizer.
func TestRetrainerRecordsFeaturizer(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ds := streamtest.SmallDataset(40)
	mine := media.Featurizer{Name: "photo-regions", Version: "1"}
	other := media.Featurizer{Name: "photo-regions", Version: "2"}
	write := func(ids []string, bagsOf func(i int) *media.Featurizer) {
		var raws [][]byte
		for i := range ids {
			b := ds.Bags[i]
			m := wire.NewBagMessage(&b, "toy", ds.Dim, ds.Classes, false)
			m.ID = ids[i]
			m.Featurizer = bagsOf(i)
			raw, err := m.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			raws = append(raws, raw)
		}
		h.writeTrain(ctx, ids, raws)
	}
	ids := make([]string, len(ds.Bags))
	for i, b := range ds.Bags {
		ids[i] = b.ID
	}
	write(ids, func(i int) *media.Featurizer {
		if i%10 == 0 {
			return &other // 4 of 40
		}
		return &mine
	})
	r := h.retrainer(func(c *RetrainerConfig) { c.Every = 1000; c.DeadLetterTopic = h.topics.DeadLetter })
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// The rebuilt window holds enough bags for a first model: the
	// retrainer refits on its own.
	streamtest.WaitFor(t, 20*time.Second, "first refit", func() bool { return len(r.Results()) > 0 })
	res := r.Results()[0]
	if !res.Promoted || res.TrainBags+res.HeldOutBags != 36 {
		t.Errorf("first refit %+v: want promoted, fitted on the 36 bags of the majority's featurizer", res)
	}
	_, meta, err := h.reg.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Featurizer == nil || !meta.Featurizer.Equal(mine) {
		t.Fatalf("stored version's featurizer %v, want %v", meta.Featurizer, mine)
	}
	// The 4 bags of the other featurizer, admitted before any model, are
	// dead-lettered once the model is known; a later one on arrival.
	write([]string{"late-other"}, func(int) *media.Featurizer { return &other })
	dead := h.deadLetters(ctx, 5, 20*time.Second)
	if len(dead) != 5 {
		t.Fatalf("%d dead letters, want 5", len(dead))
	}
	for _, d := range dead {
		if d.Reason != wire.ReasonFeaturizer || !strings.Contains(d.Error, "photo-regions@2") {
			t.Errorf("dead letter of %s: reason %s (%s), want featurizer", d.Key, d.Reason, d.Error)
		}
	}
}

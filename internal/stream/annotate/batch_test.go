package annotate

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestNextBatchGathersWhileTheStageIsBusy: a batch takes what has arrived
// and goes out at once when the process stage is idle; while the stage is
// busy it goes on gathering until the stage is free, the batch is full or
// BatchWait has passed. Catches the fixed wait that held a light stream's
// bags back by BatchWait whenever a batch was queued (the old p99 at a
// tenth of the rate), and a batch that never stops gathering.
func TestNextBatchGathersWhileTheStageIsBusy(t *testing.T) {
	const wait = 5 * time.Second // long: a test that waits it fails its bound below
	for _, c := range []struct {
		name      string
		idle      bool          // the stage is idle when the batch starts
		freeAfter time.Duration // the stage frees up once the late messages are taken (0: never)
		late      int           // messages arriving after the first ones, one every 5 ms
		batchSize int
		want      int
		maxTime   time.Duration
	}{
		{"idle stage: what has arrived, at once", true, 0, 3, 10, 2, time.Second},
		{"busy stage: gathers until it is free", false, time.Millisecond, 7, 100, 2 + 7, time.Second},
		{"busy stage: until the batch is full", false, 0, 20, 5, 5, time.Second},
		{"busy stage that stays busy: BatchWait", false, 0, 0, 10, 2, wait + time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &Annotator{cfg: AnnotatorConfig{BatchSize: c.batchSize, BatchWait: wait}}
			if c.name == "busy stage that stays busy: BatchWait" {
				a.cfg.BatchWait = 50 * time.Millisecond
			}
			fetched := make(chan kafka.Message, 100)
			fetched <- kafka.Message{Offset: 0}
			fetched <- kafka.Message{Offset: 1}
			idle := make(chan struct{}, 1)
			if c.idle {
				idle <- struct{}{}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for i := range c.late {
					select {
					case <-time.After(5 * time.Millisecond):
					case <-ctx.Done():
						return
					}
					fetched <- kafka.Message{Offset: int64(2 + i)}
				}
				if c.freeAfter == 0 {
					return
				}
				// The stage frees up once every late message is taken.
				for len(fetched) > 0 {
					time.Sleep(c.freeAfter)
				}
				idle <- struct{}{}
			}()
			start := time.Now()
			got := a.nextBatch(ctx, fetched, idle)
			took := time.Since(start)
			if len(got) != c.want {
				t.Errorf("batch of %d, want %d", len(got), c.want)
			}
			if took > c.maxTime {
				t.Errorf("took %v, want at most %v", took, c.maxTime)
			}
			for i, m := range got {
				if m.Offset != int64(i) {
					t.Fatalf("message %d has offset %d: out of order", i, m.Offset)
				}
			}
		})
	}
}

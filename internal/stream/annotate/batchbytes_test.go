package annotate

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestNextBatchBoundedInBytes: a batch of large messages closes once its
// bytes reach MaxBatchBytes, whatever BatchSize allows, so the batches in
// flight hold at most MaxInFlight times that (plus one message each)
// instead of MaxInFlight*BatchSize messages: 1 MiB bags took annotators to
// 629-734 MB RSS. Small messages still fill a batch by count.
func TestNextBatchBoundedInBytes(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name      string
		size, n   int
		want      int
		wantBytes int
	}{
		{"3 MiB messages, 8 MiB bound", 3 * mib, 10, 3, 9 * mib},
		{"1 KiB messages fill by count", 1 << 10, 100, 64, 64 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &Annotator{cfg: AnnotatorConfig{BatchSize: 64, BatchWait: time.Second, MaxBatchBytes: 8 * mib}}
			fetched := make(chan kafka.Message, c.n)
			for i := range c.n {
				fetched <- kafka.Message{Offset: int64(i), Value: make([]byte, c.size)}
			}
			idle := make(chan struct{}, 1)
			idle <- struct{}{}
			got := a.nextBatch(context.Background(), fetched, idle)
			n := 0
			for _, m := range got {
				n += len(m.Value)
			}
			t.Logf("%s: batch of %d messages, %d bytes (bound %d)", c.name, len(got), n, 8*mib)
			if len(got) != c.want || n != c.wantBytes {
				t.Errorf("batch of %d messages, %d bytes; want %d, %d", len(got), n, c.want, c.wantBytes)
			}
		})
	}
}

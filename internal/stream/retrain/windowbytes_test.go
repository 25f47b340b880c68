package retrain

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestWindowBoundedInBytes: the window is bounded in bytes as well as in
// bags. Training bags of 1 MiB of features (the adversary's: 300 of them
// took the retrainer from 30 MB to 1.6 GB) beyond WindowBytes push the
// oldest out first; the bytes counted stay within the bound, and they are
// what the bags hold (checked against the features counted by hand).
func TestWindowBoundedInBytes(t *testing.T) {
	h := newHarness(t)
	const mib = 1 << 20
	r := h.retrainer(func(c *RetrainerConfig) { c.WindowBytes = 4 * mib })
	const dim = 128
	rows := mib / 8 / dim // 1 MiB of float64 features a bag
	for i := range 12 {
		b := mil.Bag{ID: fmt.Sprintf("big-%02d", i), Labels: []int{0}}
		for range rows {
			b.Instances = append(b.Instances, make([]float64, dim))
		}
		raw, err := json.Marshal(wire.NewBagMessage(&b, "big", dim, []string{"a", "b"}, false))
		if err != nil {
			t.Fatal(err)
		}
		r.add(context.Background(), kafka.Message{Key: []byte(b.ID), Value: raw, Offset: int64(i)})
	}
	r.mu.Lock()
	order := append([]string(nil), r.order...)
	held := r.windowBytes
	var features int64
	for _, id := range order {
		for _, x := range r.bags[id].bag.Instances {
			features += int64(len(x))
		}
	}
	r.mu.Unlock()
	t.Logf("12 bags of 1 MiB of features, window bound 4 MiB: window holds %d bags (%v ... %v), %d bytes counted, %d bytes of features",
		len(order), order[0], order[len(order)-1], held, 8*features)
	if len(order) == 0 || len(order) > 4 || order[len(order)-1] != "big-11" || held > 4*mib || held < 8*features {
		t.Errorf("window %v holding %d bytes counted (%d of features); want the newest bags within 4 MiB", order, held, 8*features)
	}
}

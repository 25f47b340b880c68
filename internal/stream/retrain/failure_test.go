package retrain

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// writeTrain writes raw messages to the training topic, keyed by key.
func (h *harness) writeTrain(ctx context.Context, keys []string, raws [][]byte) {
	h.t.Helper()
	w := kafkaio.NewWriter(h.brokers, kafkasec.Conn{})
	defer w.Close()
	msgs := make([]kafka.Message, len(raws))
	for i := range raws {
		msgs[i] = kafka.Message{Topic: h.topics.Train, Key: []byte(keys[i]), Value: raws[i]}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		h.t.Fatal(err)
	}
}

// writeBags writes bags of ds to the training topic.
func (h *harness) writeBags(ctx context.Context, ds *mil.Dataset, bags []mil.Bag) {
	h.t.Helper()
	var keys []string
	var raws [][]byte
	for i := range bags {
		raw, _ := json.Marshal(wire.NewBagMessage(&bags[i], "toy", ds.Dim, ds.Classes, false))
		keys, raws = append(keys, bags[i].ID), append(raws, raw)
	}
	h.writeTrain(ctx, keys, raws)
}

// deadLetters tails the dead-letter topic until n records arrived or
// timeout passed.
func (h *harness) deadLetters(ctx context.Context, n int, timeout time.Duration) []wire.DeadLetter {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out []wire.DeadLetter
	err := kafkaio.Tail(ctx, h.brokers, kafkasec.Conn{}, h.topics.DeadLetter, func(m kafka.Message) error {
		var d wire.DeadLetter
		if err := json.Unmarshal(m.Value, &d); err != nil {
			return err
		}
		out = append(out, d)
		if len(out) >= n {
			return kafkaio.ErrStop
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// poison are training messages no fit can use, with their reasons: a label
// set over the kind's cap (max_labels=2 here, as orlr's exact E-step has
// one), another dimension, a NaN, no labels, malformed JSON, another
// vocabulary.
func poison() (keys []string, raws [][]byte, want map[string]wire.Reason) {
	want = map[string]wire.Reason{}
	add := func(key, raw string, r wire.Reason) {
		keys, raws = append(keys, key), append(raws, []byte(raw))
		want[key] = r
	}
	add("p-labels", `{"schema_version":1,"id":"p-labels","dim":2,"instances":[[0,0],[5,0],[0,5]],"labels":[0,1,2],"classes":["a","b","c"]}`, wire.ReasonLabelSetTooLarge)
	add("p-dim", `{"schema_version":1,"id":"p-dim","dim":3,"instances":[[0,0,1]],"labels":[0],"classes":["a","b","c"]}`, wire.ReasonDimension)
	add("p-nan", `{"schema_version":1,"id":"p-nan","dim":2,"instances":[[0,"NaN"]],"labels":[0],"classes":["a","b","c"]}`, wire.ReasonNonFinite)
	add("p-unlabeled", `{"schema_version":1,"id":"p-unlabeled","dim":2,"instances":[[0,0]]}`, wire.ReasonLabels)
	add("p-json", `{"schema_version":1,"id":"p-json","dim":2,"instances":[[0,0]`, wire.ReasonMalformedJSON)
	add("p-vocab", `{"schema_version":1,"id":"p-vocab","dim":2,"instances":[[0,0]],"labels":[0],"classes":["x","y","z"]}`, wire.ReasonVocabulary)
	return keys, raws, want
}

// TestRetrainerDeadLettersPoisonBags puts bags no fit can use among good
// ones on the training topic, with a current model and without one: none
// enters the window, each is dead-lettered once with its reason (stage
// retrain, pointing at its offset), and the refits keep succeeding.
func TestRetrainerDeadLettersPoisonBags(t *testing.T) {
	for _, withModel := range []bool{true, false} {
		t.Run(fmt.Sprintf("current model %v", withModel), func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ds := streamtest.SmallDataset(90)
			if withModel {
				h.publishModel(ds, nil)
			}
			h.writeBags(ctx, ds, ds.Bags[:30])
			keys, raws, want := poison()
			h.writeTrain(ctx, keys, raws)
			h.writeBags(ctx, ds, ds.Bags[30:60])
			r := h.retrainer(func(c *RetrainerConfig) {
				c.DeadLetterTopic = h.topics.DeadLetter
				c.Params = models.Params{"max_labels": "2"}
				c.Every = 20
			})
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			streamtest.WaitFor(t, 20*time.Second, "first refit", func() bool { return len(r.Results()) == 1 })
			h.writeBags(ctx, ds, ds.Bags[60:90])
			// Every 20: one refit after 20 of the 30 new bags.
			streamtest.WaitFor(t, 20*time.Second, "refit on the new bags", func() bool { return len(r.Results()) == 2 && r.Len() == 90 })
			for i, res := range r.Results() {
				if res.Version == "" || !res.Promoted || res.TrainBags+res.HeldOutBags != []int{60, 80}[i] {
					t.Errorf("refit %d: %+v", i, res)
				}
			}
			dead := h.deadLetters(ctx, len(want)+1, 5*time.Second)
			got := map[string]wire.DeadLetter{}
			for _, d := range dead {
				if _, dup := got[d.Key]; dup {
					t.Errorf("%s dead-lettered twice", d.Key)
				}
				got[d.Key] = d
			}
			if len(got) != len(want) {
				t.Errorf("%d dead letters, want %d", len(got), len(want))
			}
			for i, key := range keys {
				d, ok := got[key]
				if !ok || d.Reason != want[key] || d.Stage != wire.StageRetrain || d.Topic != h.topics.Train || d.Offset < 0 {
					t.Errorf("%s: dead letter %+v, want reason %s", key, d, want[key])
					continue
				}
				if string(d.Original) != string(raws[i]) {
					t.Errorf("%s: original not kept", key)
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRetrainerRestartIsQuiet restarts the retrainer over a topic holding
// bags it has fitted on and bags it has not: the rebuild refits nothing
// while it replays; once caught up it refits once if the bags beyond the
// current model's training offsets are Every or more, else not at all.
// The version records the offsets it was fitted on.
func TestRetrainerRestartIsQuiet(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	ds := streamtest.SmallDataset(200)
	run := func(every int) (*Retrainer, func()) {
		r := h.retrainer(func(c *RetrainerConfig) { c.Every = every; c.DeadLetterTopic = h.topics.DeadLetter })
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- r.Run(rctx) }()
		return r, func() {
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	// settle waits for r to hold n bags, then long enough for a refit to
	// show, and returns its refits.
	settle := func(r *Retrainer, n int) int {
		streamtest.WaitFor(t, 20*time.Second, fmt.Sprintf("window of %d", n), func() bool { return r.Len() == n })
		time.Sleep(700 * time.Millisecond)
		return len(r.Results())
	}
	endOffsets := func() map[int]int64 {
		ends := map[int]int64{}
		for p := range 3 {
			conn, err := kafka.DialLeader(ctx, "tcp", h.brokers[0], h.topics.Train, p)
			if err != nil {
				t.Fatal(err)
			}
			_, last, err := conn.ReadOffsets()
			conn.Close()
			if err != nil {
				t.Fatal(err)
			}
			if last > 0 {
				ends[p] = last
			}
		}
		return ends
	}

	// A fresh deployment over 60 bags: one refit, the first model, after
	// the rebuild (Every 30 would have made two while replaying).
	h.writeBags(ctx, ds, ds.Bags[:60])
	r, stop := run(30)
	if n := settle(r, 60); n != 1 {
		t.Fatalf("fresh start over 60 bags: %d refits, want 1", n)
	}
	_, meta, err := h.reg.Current(ctx)
	if err != nil || !maps.Equal(meta.TrainOffsets, endOffsets()) {
		t.Fatalf("current %s trained on offsets %v, topic ends at %v (%v)", meta.Version, meta.TrainOffsets, endOffsets(), err)
	}
	h.writeBags(ctx, ds, ds.Bags[60:80]) // 20 new: below Every
	if n := settle(r, 80); n != 1 {
		t.Fatalf("20 new bags with Every 30: %d refits, want 1", n)
	}
	stop()

	// Restart: 20 bags beyond the model's offsets, fewer than Every.
	r, stop = run(30)
	if n := settle(r, 80); n != 0 {
		t.Fatalf("restart with 20 new bags: %d refits, want 0", n)
	}
	h.writeBags(ctx, ds, ds.Bags[80:95]) // 35 new since the model: one refit
	if n := settle(r, 95); n != 1 {
		t.Fatalf("35 new bags with Every 30: %d refits, want 1", n)
	}
	stop()

	// Restart with 60 new bags and Every 3: one refit after the rebuild
	// (replaying would have made 20).
	h.writeBags(ctx, ds, ds.Bags[95:155])
	r, stop = run(3)
	if n := settle(r, 155); n != 1 {
		t.Fatalf("restart with 60 new bags and Every 3: %d refits, want 1", n)
	}
	_, meta, err = h.reg.Current(ctx)
	if err != nil || !maps.Equal(meta.TrainOffsets, endOffsets()) {
		t.Fatalf("current %s trained on offsets %v, topic ends at %v (%v)", meta.Version, meta.TrainOffsets, endOffsets(), err)
	}
	stop()

	// Restart with nothing new: no refit, whatever Every.
	r, stop = run(1)
	if n := settle(r, 155); n != 0 {
		t.Fatalf("restart with nothing new: %d refits, want 0", n)
	}
	stop()
}

package status

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkaview"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// fakeRegistry and fakeKafka stand in for Redis and Kafka so that the
// collector's arithmetic can be checked exactly; the browser test and
// cmd/mimlctl's TestStatus run it on the real ones.
type fakeRegistry struct {
	metas   []featurestore.VersionMeta
	aliases map[string]string
	err     error
}

func (f *fakeRegistry) List(context.Context) ([]featurestore.VersionMeta, error) {
	return f.metas, f.err
}

func (f *fakeRegistry) Alias(_ context.Context, a string) (string, error) {
	if v, ok := f.aliases[a]; ok {
		return v, nil
	}
	return "", featurestore.ErrNotFound
}

type fakeKafka struct {
	mu   sync.Mutex
	lag  []kafkaview.PartitionLag
	dead [][]byte
}

func (f *fakeKafka) set(lag []kafkaview.PartitionLag) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lag = lag
}

func (f *fakeKafka) GroupLag(context.Context, string, string) ([]kafkaview.PartitionLag, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lag, nil
}

func (f *fakeKafka) Read(ctx context.Context, _ string, _ kafkaview.ReadOptions, fn func(kafka.Message) error) error {
	for _, v := range f.dead {
		if err := fn(kafka.Message{Value: v}); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

func pl(p int, first, end, committed int64) kafkaview.PartitionLag {
	o := kafkaview.PartitionOffsets{Partition: p, First: first, End: end}
	return kafkaview.PartitionLag{PartitionOffsets: o, Committed: committed, Lag: end - max(committed, first)}
}

func TestCollectorPoll(t *testing.T) {
	reg := &fakeRegistry{
		metas:   []featurestore.VersionMeta{{Version: "v1"}, {Version: "v2"}, {Version: "v3"}},
		aliases: map[string]string{featurestore.AliasCurrent: "v3", featurestore.AliasPrevious: "v1"},
	}
	k := &fakeKafka{}
	c, err := NewCollector(Config{Registry: reg, Kafka: k, Topics: wire.DefaultTopics(), Group: "g", History: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.Ready() {
		t.Fatal("ready before any poll")
	}
	ctx := t.Context()
	// A partition with nothing committed counts from its first offset.
	k.set([]kafkaview.PartitionLag{pl(0, 0, 10, 4), pl(1, 5, 8, -1)})
	c.Poll(ctx)
	time.Sleep(20 * time.Millisecond)
	k.set([]kafkaview.PartitionLag{pl(0, 0, 16, 9), pl(1, 5, 9, 7)})
	c.Poll(ctx)
	s := c.Snapshot()
	samples := c.Samples()
	if len(samples) != 2 || s.Seq != 2 || !c.Ready() {
		t.Fatalf("%d samples, seq %d, ready %v", len(samples), s.Seq, c.Ready())
	}
	dt := samples[1].At.Sub(samples[0].At).Seconds()
	// Committed: 4+5 -> 9+7 (+7); ends: 10+8 -> 16+9 (+7).
	if got, want := s.Throughput.Annotated, 7/dt; math.Abs(got-want) > 1e-9 {
		t.Errorf("annotated/s %v, want %v", got, want)
	}
	if got, want := s.Throughput.Produced, 7/dt; math.Abs(got-want) > 1e-9 {
		t.Errorf("produced/s %v, want %v", got, want)
	}
	if s.LagTotal != 7+2 {
		t.Errorf("lag total %d, want 9", s.LagTotal)
	}
	if s.Current != "v3" || strings.Join(s.Models[0].Aliases, ",") != "previous" || strings.Join(s.Models[2].Aliases, ",") != "current" || len(s.Models[1].Aliases) != 0 {
		t.Errorf("models %+v, current %s", s.Models, s.Current)
	}
	// History is bounded.
	c.Poll(ctx)
	if n := len(c.Samples()); n != 2 {
		t.Errorf("%d samples kept, want 2", n)
	}
	// A failing source is reported and the last good state kept.
	reg.err = errors.New("redis down")
	c.Poll(ctx)
	s = c.Snapshot()
	if s.Errors["registry"] != "redis down" || len(s.Models) != 3 {
		t.Errorf("after a registry failure: errors %v, %d models", s.Errors, len(s.Models))
	}
	reg.err = nil
	c.Poll(ctx)
	if s := c.Snapshot(); len(s.Errors) != 0 {
		t.Errorf("errors after recovery: %v", s.Errors)
	}
}

func TestCollectorDeadLetters(t *testing.T) {
	k := &fakeKafka{dead: [][]byte{
		wire.NewDeadLetter(wire.StageAnnotate, wire.ReasonDimension, errors.New("x"), "", "", 0, 0, nil).Encode(1 << 20),
		wire.NewDeadLetter(wire.StageIngest, wire.ReasonSchema, errors.New("x"), "", "", 0, -1, nil).Encode(1 << 20),
		wire.NewDeadLetter(wire.StageAnnotate, wire.ReasonDimension, errors.New("x"), "", "", 0, 1, nil).Encode(1 << 20),
		[]byte(`{"reason": "<script>alert(1)</script>", "stage": "x"}`),
		[]byte(`not json`),
	}}
	c, err := NewCollector(Config{Registry: &fakeRegistry{}, Kafka: k, Topics: wire.DefaultTopics(), Group: "g", Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	streamtest.WaitFor(t, 5*time.Second, "five dead letters counted", func() bool { return c.Snapshot().DeadLetters.Total >= 5 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	d := c.Snapshot().DeadLetters
	// Unknown reasons and stages go to "other": the set of names the page
	// and the plot show stays bounded, whatever the topic holds.
	want := map[string]int64{"dimension": 2, "schema": 1, "other": 2}
	if len(d.ByReason) != len(want) {
		t.Errorf("by reason %v, want %v", d.ByReason, want)
	}
	for r, n := range want {
		if d.ByReason[r] != n {
			t.Errorf("by reason %v, want %v", d.ByReason, want)
		}
	}
	if d.ByStage["annotate"] != 2 || d.ByStage["ingest"] != 1 || d.ByStage["other"] != 2 || d.Last == nil {
		t.Errorf("by stage %v, last %v", d.ByStage, d.Last)
	}
	svg, err := renderPlot("dead-letters", c.Snapshot(), nil)
	if err != nil || strings.Contains(string(svg), "<script>") {
		t.Errorf("dead-letter plot: %v, or it carries the topic's text", err)
	}
}

func TestRenderPlotsEmpty(t *testing.T) {
	for _, name := range plotNames {
		svg, err := renderPlot(name, Snapshot{DeadLetters: DeadLetters{ByReason: map[string]int64{}}}, nil)
		if err != nil || !strings.Contains(string(svg), "<svg") {
			t.Errorf("plot %s of nothing: %v", name, err)
		}
	}
	if _, err := renderPlot("nope", Snapshot{}, nil); err == nil {
		t.Error("unknown plot rendered")
	}
}

// TestCollectorCountsDeclaredStagesAndReasons: a dead letter of every stage
// and every reason wire declares is counted under its own name, none under
// "other" (the page once counted the retrainer's under "other" because it
// kept its own list of stages).
func TestCollectorCountsDeclaredStagesAndReasons(t *testing.T) {
	c, err := NewCollector(Config{Registry: &fakeRegistry{}, Kafka: &fakeKafka{}, Topics: wire.DefaultTopics(), Group: "g", Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	stages, reasons := wire.Stages(), wire.Reasons()
	for i := range max(len(stages), len(reasons)) {
		stage, reason := stages[i%len(stages)], reasons[i%len(reasons)]
		c.addDeadLetter(wire.NewDeadLetter(stage, reason, errors.New("x"), "k", "t", 0, int64(i), nil).Encode(1 << 20))
	}
	d := c.Snapshot().DeadLetters
	for _, s := range stages {
		if d.ByStage[s] == 0 {
			t.Errorf("stage %q not counted under its name: by stage %v", s, d.ByStage)
		}
	}
	for _, r := range reasons {
		if d.ByReason[string(r)] == 0 {
			t.Errorf("reason %q not counted under its name: by reason %v", r, d.ByReason)
		}
	}
	if d.ByStage[reasonOther] != 0 || d.ByReason[reasonOther] != 0 {
		t.Errorf("declared stages or reasons counted as %q: by stage %v, by reason %v", reasonOther, d.ByStage, d.ByReason)
	}
}

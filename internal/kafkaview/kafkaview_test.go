package kafkaview

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// byKeyPrefix sends "pN-..." keys to partition N.
var byKeyPrefix = kafka.BalancerFunc(func(m kafka.Message, _ ...int) int {
	p, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(string(m.Key), "-", 2)[0], "p"))
	return p
})

func produce(t *testing.T, brokers []string, topic string, perPartition map[int]int, tag string) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: byKeyPrefix, BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	var msgs []kafka.Message
	for p, n := range perPartition {
		for i := range n {
			msgs = append(msgs, kafka.Message{Key: fmt.Appendf(nil, "p%d-%s-%d", p, tag, i), Value: fmt.Appendf(nil, "%s %d/%d", tag, p, i)})
		}
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

func TestOffsetsLagAndRead(t *testing.T) {
	const topic = "t"
	brokers := streamtest.StartBroker(t, 3, topic)
	v := New(brokers, kafkasec.Conn{})
	ctx := context.Background()
	produce(t, brokers, topic, map[int]int{0: 5, 1: 3}, "old")

	offs, err := v.Offsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := []PartitionOffsets{{0, 0, 5}, {1, 0, 3}, {2, 0, 0}}
	if !slices.Equal(offs, want) {
		t.Fatalf("Offsets = %v, want %v", offs, want)
	}

	// A group that committed nothing lags by every message; after a
	// commit of offset 2 in partition 0, by the three after it.
	lags, err := v.GroupLag(ctx, "g", topic)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lags {
		if l.Committed != -1 || l.Lag != want[i].End {
			t.Errorf("before a commit: %+v, want committed -1, lag %d", l, want[i].End)
		}
	}
	commit(t, brokers, "g", topic, 0, 2)
	lags, err = v.GroupLag(ctx, "g", topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := []int64{lags[0].Committed, lags[0].Lag, lags[1].Lag, lags[2].Lag}; !slices.Equal(got, []int64{2, 3, 3, 0}) {
		t.Errorf("after commit: committed/lag %v, want [2 3 3 0]; %+v", got, lags)
	}

	// Read delivers every stored message once, in offset order within a
	// partition, and returns at the end.
	var got []kafka.Message
	if err := v.Read(ctx, topic, ReadOptions{}, func(m kafka.Message) error { got = append(got, m); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 {
		t.Fatalf("Read delivered %d messages, want 8", len(got))
	}
	next := map[int]int64{}
	for _, m := range got {
		if m.Offset != next[m.Partition] {
			t.Errorf("partition %d: offset %d, want %d", m.Partition, m.Offset, next[m.Partition])
		}
		next[m.Partition]++
	}

	// ErrStop ends the read early, without error.
	n := 0
	err = v.Read(ctx, topic, ReadOptions{}, func(kafka.Message) error {
		n++
		if n == 2 {
			return ErrStop
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Errorf("Read with ErrStop after 2: err %v, %d delivered", err, n)
	}
	// Another error is returned.
	boom := errors.New("boom")
	if err := v.Read(ctx, topic, ReadOptions{}, func(kafka.Message) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Read with a failing callback = %v, want boom", err)
	}
	// From the end without following, there is nothing to read.
	if err := v.Read(ctx, topic, ReadOptions{FromEnd: true}, func(m kafka.Message) error {
		return fmt.Errorf("delivered %s", m.Value)
	}); err != nil {
		t.Error(err)
	}
	if _, err := v.Offsets(ctx, "no-such-topic"); err == nil {
		t.Error("Offsets of a missing topic: no error")
	}
}

// TestReadFollow checks that following from the end delivers only messages
// written after the read began, then stops with ctx.
func TestReadFollow(t *testing.T) {
	const topic = "t"
	brokers := streamtest.StartBroker(t, 2, topic)
	v := New(brokers, kafkasec.Conn{})
	produce(t, brokers, topic, map[int]int{0: 4, 1: 2}, "old")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var got []string
	done := make(chan error, 1)
	go func() {
		done <- v.Read(ctx, topic, ReadOptions{FromEnd: true, Follow: true}, func(m kafka.Message) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, string(m.Value))
			return nil
		})
	}()
	received := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	for i := 0; received() < 2; i++ {
		if i > 200 {
			t.Fatal("no new message delivered within 10 s")
		}
		produce(t, brokers, topic, map[int]int{0: 1, 1: 1}, "new"+strconv.Itoa(i))
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Read after cancel = %v, want nil", err)
	}
	for _, g := range got {
		if strings.HasPrefix(g, "old") {
			t.Errorf("following from the end delivered an old message %q", g)
		}
	}
}

// commit commits offset for the group in one partition, as a member that
// joined no generation (what admin tools do).
func commit(t *testing.T, brokers []string, group, topic string, partition int, offset int64) {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	resp, err := cl.OffsetCommit(context.Background(), &kafka.OffsetCommitRequest{GroupID: group, GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{topic: {{Partition: partition, Offset: offset}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range resp.Topics {
		for _, p := range ps {
			if p.Error != nil {
				t.Fatalf("commit %s/%d: %v", topic, p.Partition, p.Error)
			}
		}
	}
}

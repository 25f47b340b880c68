package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestRestartKeepsData restarts the broker under a writer and a consumer
// group: the records written before, the group's committed offset and the
// topic are there after, on the same address, and the clients go on.
func TestRestartKeepsData(t *testing.T) {
	b, err := Start(Options{Partitions: 1, Topics: []string{"in"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addrs := b.Addrs()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(addrs...), Topic: "in", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	write := func(from, to int) {
		t.Helper()
		var msgs []kafka.Message
		for i := from; i < to; i++ {
			msgs = append(msgs, kafka.Message{Value: fmt.Appendf(nil, "m%02d", i)})
		}
		var err error
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			if err = w.WriteMessages(ctx, msgs...); err == nil {
				return
			}
		}
		t.Fatalf("write after the restart: %v", err)
	}
	write(0, 10)
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: addrs, GroupID: "g", Topic: "in", MaxWait: 100 * time.Millisecond, StartOffset: kafka.FirstOffset})
	for range 6 {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()

	if err := b.Restart(500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := b.Addrs(); fmt.Sprint(got) != fmt.Sprint(addrs) {
		t.Fatalf("addresses %v after the restart, want %v", got, addrs)
	}
	write(10, 12)
	r = kafka.NewReader(kafka.ReaderConfig{Brokers: addrs, GroupID: "g", Topic: "in", MaxWait: 100 * time.Millisecond, StartOffset: kafka.FirstOffset})
	defer r.Close()
	var got []string
	for len(got) < 6 {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, fmt.Sprintf("%d:%s", m.Offset, m.Value))
	}
	t.Logf("after a restart the group resumes at %v", got)
	if want := "[6:m06 7:m07 8:m08 9:m09 10:m10 11:m11]"; fmt.Sprint(got) != want {
		t.Errorf("the group read %v after the restart, want %s (its committed offset and the records kept)", got, want)
	}
}

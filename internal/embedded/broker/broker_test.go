package broker_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/embedded/broker"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
)

// TestKafkaGoCompat checks the kafka-go features the pipeline relies on
// against kfake: explicit topic creation, acks=all produce with a key
// balancer, a consumer group with explicit commits, and that a second group
// member resumes after the committed offset.
func TestKafkaGoCompat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := broker.Start(broker.Options{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := kafkaio.EnsureTopics(ctx, b.Addrs(), kafkasec.Conn{}, 3, "in"); err != nil {
		t.Fatal(err)
	}
	// Creating again must not fail.
	if err := kafkaio.EnsureTopics(ctx, b.Addrs(), kafkasec.Conn{}, 3, "in"); err != nil {
		t.Fatalf("second EnsureTopics: %v", err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(b.Addrs()...), Topic: "in", RequiredAcks: kafka.RequireAll, Balancer: &kafka.Hash{}, BatchTimeout: time.Millisecond}
	defer w.Close()
	const n = 30
	var msgs []kafka.Message
	for i := range n {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("k%02d", i)), Value: []byte("v"), Headers: []kafka.Header{{Key: "h", Value: []byte("x")}}})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	read := func(limit int) []string {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: b.Addrs(), GroupID: "g", Topic: "in", MaxWait: 100 * time.Millisecond, StartOffset: kafka.FirstOffset})
		defer r.Close()
		var keys []string
		for len(keys) < limit {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("fetch after %d: %v", len(keys), err)
			}
			if len(m.Headers) != 1 || string(m.Headers[0].Value) != "x" {
				t.Fatalf("headers lost: %v", m.Headers)
			}
			keys = append(keys, string(m.Key))
			if err := r.CommitMessages(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		return keys
	}
	first := read(10)
	rest := read(n - 10)
	all := append(first, rest...)
	sort.Strings(all)
	for i := range n {
		if want := fmt.Sprintf("k%02d", i); all[i] != want {
			t.Fatalf("key %d = %s, want %s (duplicates or loss across a group restart): %v", i, all[i], want, all)
		}
	}
}

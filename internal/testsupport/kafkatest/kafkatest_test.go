package kafkatest

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
)

// TestStartProduceRestart starts a single node of each tested version,
// writes through the Kafka protocol with acks=all, stops the node with
// SIGTERM, restarts it on its data and reads the records back.
func TestStartProduceRestart(t *testing.T) {
	for _, v := range Selected() {
		t.Run(v, func(t *testing.T) {
			c := Start(t, Options{Version: v})
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			if err := kafkaio.EnsureTopics(ctx, c.Addrs(), kafkasec.Conn{}, 1, "t"); err != nil {
				t.Fatal(err)
			}
			w := &kafka.Writer{Addr: kafka.TCP(c.Addrs()...), Topic: "t", RequiredAcks: kafka.RequireAll}
			if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: []byte("before restart")}); err != nil {
				t.Fatal(err)
			}
			w.Close()
			c.Stop(0)
			if c.Running(0) {
				t.Fatal("node still running after Stop")
			}
			c.Restart(0)
			if err := c.WaitReady(ctx, 1); err != nil {
				t.Fatal(err)
			}
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.Addrs(), Topic: "t", Partition: 0, MaxWait: 100 * time.Millisecond})
			defer r.Close()
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Value) != "before restart" {
				t.Fatalf("read %q after restart", m.Value)
			}
		})
	}
}

// TestClusterIDNeverStartsWithADash: kafka-storage format takes the
// cluster id after -t, and its argument parser refuses one that starts
// with '-' (one draw in 64 did, and the real-Kafka suite failed to start a
// node); every id is still 16 bytes in base64url.
func TestClusterIDNeverStartsWithADash(t *testing.T) {
	for range 20000 {
		id := newClusterID()
		b, err := base64.RawURLEncoding.DecodeString(id)
		if id[0] == '-' || err != nil || len(b) != 16 {
			t.Fatalf("cluster id %q: %d bytes, %v", id, len(b), err)
		}
	}
}

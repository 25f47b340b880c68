package kafkaio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// cluster starts a kfake cluster on loopback with the given topics (name ->
// max.message.bytes, 0 for the broker default).
func cluster(t *testing.T, topics map[string]int) (*kfake.Cluster, []string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ListenFn(func(network, _ string) (net.Listener, error) {
		return net.Listen(network, "127.0.0.1:0")
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for name, limit := range topics {
		var cfg map[string]string
		if limit > 0 {
			cfg = map[string]string{"max.message.bytes": fmt.Sprint(limit)}
		}
		if err := c.CreateTopic(name, 2, cfg); err != nil {
			t.Fatal(err)
		}
	}
	return c, c.ListenAddrs()
}

// readAll reads every message of topic's partitions 0 and 1.
func readAll(t *testing.T, brokers []string, topic string) []kafka.Message {
	t.Helper()
	var out []kafka.Message
	for p := range 2 {
		conn, err := kafka.DialLeader(t.Context(), "tcp", brokers[0], topic, p)
		if err != nil {
			t.Fatal(err)
		}
		first, last, err := conn.ReadOffsets()
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		if last == first {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p, MinBytes: 1, MaxBytes: 64 << 20, MaxWait: 100 * time.Millisecond})
		if err := r.SetOffset(first); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("read %s/%d: %v", topic, p, err)
			}
			out = append(out, m)
			if m.Offset == last-1 {
				break
			}
		}
		cancel()
		r.Close()
	}
	return out
}

func msg(topic, key string, size int) kafka.Message {
	return kafka.Message{Topic: topic, Key: []byte(key), Value: bytes.Repeat([]byte{'x'}, size)}
}

// TestRecordSizeMatchesKafkaGo pins RecordSize to kafka-go's own accounting:
// a message of exactly the writer's BatchBytes is accepted by kafka-go, one
// byte more is refused before anything is sent.
func TestRecordSizeMatchesKafkaGo(t *testing.T) {
	_, brokers := cluster(t, map[string]int{"t": 0})
	w := newWriter(brokers, kafkasec.Conn{}, 8192, 1, 0, DefaultLinger)
	defer w.Close()
	h := []kafka.Header{{Key: "traceparent", Value: bytes.Repeat([]byte{'0'}, 55)}, {Key: "k", Value: nil}}
	base := RecordSize(kafka.Message{Key: []byte("key"), Headers: h})
	limit := RecordLimit(8192)
	fits := kafka.Message{Topic: "t", Key: []byte("key"), Headers: h, Value: make([]byte, limit-base)}
	over := fits
	over.Value = make([]byte, limit-base+1)
	if RecordSize(fits) != limit || RecordSize(over) != limit+1 {
		t.Fatalf("RecordSize: %d and %d, want %d and %d", RecordSize(fits), RecordSize(over), limit, limit+1)
	}
	if err := w.WriteMessages(t.Context(), fits); err != nil {
		t.Fatalf("a record of RecordSize == BatchBytes: %v", err)
	}
	var tooLarge kafka.MessageTooLargeError
	if err := w.WriteMessages(t.Context(), over); !errors.As(err, &tooLarge) {
		t.Fatalf("a record one byte over: %v, want kafka-go's MessageTooLargeError", err)
	}
}

func TestMaxMessageBytesFromBroker(t *testing.T) {
	_, brokers := cluster(t, map[string]int{"small": 50_000, "dflt": 0})
	ctx := t.Context()
	cases := []struct {
		configured int
		topics     []string
		want       int
		fails      bool
	}{
		{1 << 20, []string{"small", "dflt"}, 50_000, false},
		{0, []string{"dflt"}, DefaultMaxMessageBytes, false}, // kfake's default is Kafka's 1048588
		{20_000, []string{"small", "dflt"}, 20_000, false},
		{0, []string{"dflt", "absent"}, DefaultMaxMessageBytes, true},
	}
	for _, c := range cases {
		got, err := MaxMessageBytes(ctx, brokers, kafkasec.Conn{}, c.configured, c.topics...)
		if got != c.want || (err != nil) != c.fails {
			t.Errorf("MaxMessageBytes(%d, %v) = %d, %v; want %d, error %v", c.configured, c.topics, got, err, c.want, c.fails)
		}
	}
	// An unreachable cluster: the configured limit, and the reason.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if got, err := MaxMessageBytes(cctx, []string{addr}, kafkasec.Conn{}, 30_000, "t"); got != 30_000 || err == nil {
		t.Errorf("unreachable cluster: %d, %v; want 30000 and an error", got, err)
	}
}

// TestProducerBoundsRequests: two dozen records of 226 KB for one partition
// each fit the broker's 1 MiB; packed 16 MiB to a request (the writer's
// former BatchBytes) they are refused on every retry. The producer's
// requests stay within the limit and every record is written.
func TestProducerBoundsRequests(t *testing.T) {
	_, brokers := cluster(t, map[string]int{"dl": 0})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var msgs []kafka.Message
	for i := range 24 {
		msgs = append(msgs, msg("dl", "same-key", 226_000+i))
	}
	// The failure being fixed: one request per partition of 5 MB.
	old := newWriter(brokers, kafkasec.Conn{}, 16<<20, 1000, 0, DefaultLinger)
	old.MaxAttempts = 1
	err := old.WriteMessages(ctx, msgs...)
	old.Close()
	var we kafka.WriteErrors
	if !errors.As(err, &we) || !errors.Is(we[0], kafka.MessageSizeTooLarge) {
		t.Fatalf("16 MiB requests: %v, want MESSAGE_TOO_LARGE from the broker", err)
	}
	p := NewProducer(ProducerConfig{Brokers: brokers})
	defer p.Close()
	refused, err := p.Write(ctx, msgs)
	if err != nil || len(refused) != 0 {
		t.Fatalf("write: refused %v, %v", refused, err)
	}
	if got := readAll(t, brokers, "dl"); len(got) != len(msgs) {
		t.Fatalf("%d records on the topic, want %d", len(got), len(msgs))
	}
}

// TestProducerRefusesPerRecord: a topic whose max.message.bytes is below the
// producer's limit (altered after the producer started, say) refuses whole
// requests; the producer finds the one record it refuses alone, returns it
// with the broker's error, and writes all the others. A record over the
// producer's own limit is refused without being sent.
func TestProducerRefusesPerRecord(t *testing.T) {
	_, brokers := cluster(t, map[string]int{"tiny": 10_000})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var msgs []kafka.Message
	for i := range 5 {
		msgs = append(msgs, msg("tiny", "k", 3000+i)) // 15 KB on one partition: refused as a request
	}
	msgs = append(msgs, msg("tiny", "k", 20_000))   // refused alone by the broker
	msgs = append(msgs, msg("tiny", "k2", 2<<20))   // over the producer's limit
	msgs = append(msgs, msg("tiny", "other", 1000)) // another partition, perhaps
	p := NewProducer(ProducerConfig{Brokers: brokers, StallAfter: time.Hour})
	defer p.Close()
	refused, err := p.Write(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != 2 || refused[0].Index != 5 || refused[1].Index != 6 {
		t.Fatalf("refused %+v, want messages 5 and 6", refused)
	}
	var tl *TooLargeError
	if !errors.Is(refused[0].Err, kafka.MessageSizeTooLarge) || errors.As(refused[0].Err, &tl) {
		t.Errorf("message 5 refused with %v, want the broker's MESSAGE_TOO_LARGE", refused[0].Err)
	}
	if !errors.As(refused[1].Err, &tl) || !errors.Is(refused[1].Err, kafka.MessageSizeTooLarge) || tl.Limit != RecordLimit(DefaultMaxMessageBytes) {
		t.Errorf("message 6 refused with %v, want a TooLargeError at the producer's limit", refused[1].Err)
	}
	got := map[int]bool{}
	for _, m := range readAll(t, brokers, "tiny") {
		got[len(m.Value)] = true
	}
	for i, m := range msgs {
		if written := got[len(m.Value)]; written != (i != 5 && i != 6) {
			t.Errorf("message %d (%d bytes): written %v", i, len(m.Value), written)
		}
	}
	if _, ok := p.Retrying(); ok {
		t.Error("a refusal is not a retry, yet the producer reports one")
	}
}

// TestProducerReportsStall: a broker that keeps failing a topic's writes
// with a retriable error makes the write retry, reported by Stall once it
// has failed for StallAfter; the write completes when the fault clears.
func TestProducerReportsStall(t *testing.T) {
	c, brokers := cluster(t, map[string]int{"out": 0})
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.NotEnoughReplicas, Count: -1})
	p := NewProducer(ProducerConfig{Brokers: brokers, StallAfter: 300 * time.Millisecond})
	defer p.Close()
	type result struct {
		refused []Refused
		err     error
	}
	done := make(chan result, 1)
	go func() {
		r, err := p.Write(t.Context(), []kafka.Message{msg("out", "a", 10), msg("out", "b", 10)})
		done <- result{r, err}
	}()
	var st Stall
	streamtest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, "a stall reported", func() bool {
		s, ok := p.Stall()
		st = s
		return ok
	})
	if !errors.Is(st.Err, kafka.NotEnoughReplicas) || st.Messages == 0 || len(st.Topics) != 1 || st.Topics[0] != "out" || time.Since(st.Since) < 300*time.Millisecond {
		t.Errorf("stall %+v", st)
	}
	select {
	case r := <-done:
		t.Fatalf("write returned during the fault: %+v", r)
	default:
	}
	fault.Remove()
	select {
	case r := <-done:
		if r.err != nil || len(r.refused) != 0 {
			t.Fatalf("after the fault: %+v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("write did not complete after the fault cleared")
	}
	if _, ok := p.Stall(); ok {
		t.Error("stall still reported after the write completed")
	}
	if n := len(readAll(t, brokers, "out")); n != 2 {
		t.Errorf("%d records written, want 2", n)
	}
}

// TestCompressedWritesReadBack writes with each codec and reads the same
// keys and values back, and checks ParseCompression refuses an unknown
// name. Catches a codec the broker or the reader cannot handle (the
// pipeline would stall at the first compressed batch) and a flag that
// silently falls back to no compression.
func TestCompressedWritesReadBack(t *testing.T) {
	if _, err := ParseCompression("brotli"); err == nil {
		t.Error("ParseCompression accepted brotli")
	}
	for _, name := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(name, func(t *testing.T) {
			codec, err := ParseCompression(name)
			if err != nil {
				t.Fatal(err)
			}
			if (name == "none") != (codec == 0) {
				t.Fatalf("codec of %s: %v", name, codec)
			}
			_, brokers := cluster(t, map[string]int{"t": 0})
			p := NewProducer(ProducerConfig{Brokers: brokers, Compression: codec})
			defer p.Close()
			var msgs []kafka.Message
			want := map[string]string{}
			for i := range 50 {
				k, v := fmt.Sprintf("k%d", i), bytes.Repeat([]byte(fmt.Sprintf("value %d ", i)), 100)
				msgs = append(msgs, kafka.Message{Topic: "t", Key: []byte(k), Value: v})
				want[k] = string(v)
			}
			refused, err := p.Write(t.Context(), msgs)
			if err != nil || len(refused) > 0 {
				t.Fatalf("write: %v, refused %v", err, refused)
			}
			got := readAll(t, brokers, "t")
			if len(got) != len(msgs) {
				t.Fatalf("read %d messages, wrote %d", len(got), len(msgs))
			}
			for _, m := range got {
				if want[string(m.Key)] != string(m.Value) {
					t.Fatalf("message %s read back different", m.Key)
				}
			}
		})
	}
}

// TestProducerLinger: the producer's writers wait Linger for a partial
// request (kafka-go's BatchTimeout), DefaultLinger when unset.
func TestProducerLinger(t *testing.T) {
	for _, c := range []struct {
		linger, want time.Duration
	}{{0, DefaultLinger}, {-1, DefaultLinger}, {250 * time.Microsecond, 250 * time.Microsecond}} {
		p := NewProducer(ProducerConfig{Brokers: []string{"127.0.0.1:1"}, Linger: c.linger})
		if p.batch.BatchTimeout != c.want || p.single.BatchTimeout != c.want {
			t.Errorf("linger %v: batch %v single %v, want %v", c.linger, p.batch.BatchTimeout, p.single.BatchTimeout, c.want)
		}
		_ = p.Close()
	}
}

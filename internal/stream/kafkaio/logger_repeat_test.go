package kafkaio

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/testsupport/syncbuf"
)

// TestLoggerOncePerStateChange: a consumer group member whose broker is
// down logs each form of kafka-go's complaint once, not once per
// reconnection (hundreds of WARN lines a minute).
func TestLoggerOncePerStateChange(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{"127.0.0.1:1"}, GroupID: "g", Topic: "bags",
		JoinGroupBackoff: 10 * time.Millisecond, ReadBackoffMin: 10 * time.Millisecond, ReadBackoffMax: 20 * time.Millisecond,
		ErrorLogger: Logger(log, slog.LevelWarn)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		// A member retries as the annotator's loop does.
		if _, err := r.FetchMessage(ctx); err == nil {
			t.Fatal("read from a broker that is down")
		}
	}
	_ = r.Close()
	out := buf.String()
	lines := strings.Count(out, "\n")
	if lines == 0 || lines > 3 {
		t.Fatalf("%d WARN lines in 3 s of a broker down, want each form once (1 to 3):\n%s", lines, out)
	}
	t.Logf("%d lines in 3 s:\n%s", lines, out)
}

// TestLoggerRepeats: a form held back is logged again after the interval
// with how many were held; another form is logged at once.
func TestLoggerRepeats(t *testing.T) {
	var buf syncbuf.Buffer
	l := newLogger(slog.New(slog.NewTextHandler(&buf, nil)), slog.LevelWarn, 50*time.Millisecond)
	for i := range 5 {
		l.Printf("failed to dial partition %d", i)
	}
	l.Printf("another form %d", 1)
	time.Sleep(60 * time.Millisecond)
	l.Printf("failed to dial partition %d", 9)
	out := buf.String()
	if strings.Count(out, "\n") != 3 || !strings.Contains(out, "partition 9\" repeated=4") {
		t.Fatalf("want 3 lines, the last with repeated=4:\n%s", out)
	}
}

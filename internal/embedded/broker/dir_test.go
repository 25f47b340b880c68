package broker

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestCloseRemovesSegmentFiles checks that the broker's records go to
// segment files in its own temporary directory (not kfake's in-memory
// file system, see Start) and that Close removes them.
func TestCloseRemovesSegmentFiles(t *testing.T) {
	b, err := Start(Options{Partitions: 1, Topics: []string{"in"}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			b.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(b.Addrs()...), Topic: "in", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: make([]byte, 4096)}); err != nil {
		t.Fatal(err)
	}
	var size int64
	err = filepath.WalkDir(b.dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			size += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if size < 4096 {
		t.Fatalf("the broker's directory %s holds %d bytes after a 4 KiB record", b.dir, size)
	}
	b.Close()
	closed = true
	if _, err := os.Stat(b.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s after Close: %v, want it removed", b.dir, err)
	}
}

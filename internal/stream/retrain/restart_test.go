package retrain

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/embedded/broker"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestRetrainerFollowsARestartedBroker restarts the broker under a running
// retrainer as an empty one on the same address (a development broker
// restarted, the topic recreated): its offsets start again at 0, below
// where the retrainer was reading. The retrainer notices that its offset
// is beyond the partition's end and reads the new partition from its
// start, so the bags produced after the restart reach the window, and the
// window forgets the bags of the log that is gone, as a restarted
// retrainer's rebuild would. With kafka-go alone it waited below its old
// offset forever.
func TestRetrainerFollowsARestartedBroker(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	topics := wire.DefaultTopics()
	start := func() *broker.Embedded {
		t.Helper()
		var b *broker.Embedded
		var err error
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if b, err = broker.Start(broker.Options{Port: port, Partitions: 1, Topics: topics.All()}); err == nil {
				return b
			}
			if time.Now().After(end) {
				t.Fatalf("broker on port %d: %v", port, err)
			}
		}
	}
	b := start()
	brokers := []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	_, rdb, _ := streamtest.StartRedis(t)
	h := &harness{t: t, brokers: brokers, topics: topics, reg: featurestore.NewRegistry(rdb, "t"),
		kinds: models.NewRegistry(streamtest.CentroidKind())}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ds := streamtest.SmallDataset(60)
	h.writeBags(ctx, ds, ds.Bags[:40])
	r := h.retrainer(func(c *RetrainerConfig) {
		c.Every = 1000
		c.ReachCheck = 200 * time.Millisecond
		c.Obs = service.Observability{Logger: streamtest.Logger(t)}
	})
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	streamtest.WaitFor(t, 20*time.Second, "window of the first 40 bags", func() bool { return r.Len() == 40 })

	b.Close()
	b = start()
	defer b.Close()
	h.writeBags(ctx, ds, ds.Bags[40:])
	want := windowOf(ds.Bags[40:])
	var got []string
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if got = windowIDs(r); slices.Equal(got, want) {
			break
		}
	}
	t.Logf("after the broker restarted empty and 20 bags were produced: window %d bags (want the 20 new ones)", len(got))
	if !slices.Equal(got, want) {
		t.Errorf("window %v, want the bags produced after the restart %v", got, want)
	}
	cancel()
	<-done
}

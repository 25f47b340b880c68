package annotate

import (
	"context"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/testsupport/realpart"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestHungCacheRedisCostsABoundedDelay stops the feature cache's Redis
// (SIGSTOP, as the adversary did for 20 s: the connections stay open,
// nothing answers) while bags are annotated through the cache. The first
// bag's cache call gives up after the cache timeout and trips the breaker;
// the others skip the cache. Before, every call waited for the client's
// 3 s read timeout.
func TestHungCacheRedisCostsABoundedDelay(t *testing.T) {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		realpart.Missing(t, "redis-server is not installed (apt-get install redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(server, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGCONT); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var rdb interface{ Close() error }
	ctx := context.Background()
	var cache *featurecache.Cache
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := redisflag.Dial(ctx, redisflag.Options{Addr: addr})
		if err == nil {
			rdb, cache = c, featurecache.New(c, "hung", time.Minute, 0)
			break
		}
		if time.Now().After(end) {
			t.Fatalf("redis-server on %s: %v", addr, err)
		}
	}
	defer rdb.Close()
	ds := streamtest.SmallDataset(40)
	m, err := streamtest.CentroidKind().Fit(ctx, ds, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fm := m.(models.FeatureMapper)
	cm := &cachedMapper{cache: cache, log: slog.New(slog.DiscardHandler), cooldown: 5 * time.Second, timeout: DefaultCacheTimeout}
	if _, err := cm.annotate(ctx, fm, &ds.Bags[0], ds.Dim, models.Inductive); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var worst, total time.Duration
	for i := 1; i < len(ds.Bags); i++ {
		start := time.Now()
		if _, err := cm.annotate(ctx, fm, &ds.Bags[i], ds.Dim, models.Inductive); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		worst, total = max(worst, d), total+d
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	t.Logf("cache Redis stopped: %d bags annotated in %v, the slowest in %v (cache timeout %v)",
		len(ds.Bags)-1, total.Round(time.Millisecond), worst.Round(time.Millisecond), DefaultCacheTimeout)
	if worst > 500*time.Millisecond {
		t.Errorf("a bag took %v with the cache's Redis stopped; want the cache timeout's order (%v)", worst, DefaultCacheTimeout)
	}
}

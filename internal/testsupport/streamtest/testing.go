package streamtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/embedded/broker"
	"github.com/mimlstream/mimlstream/internal/embedded/redisserver"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
)

// The helpers below are shared by the tests of the stream packages and the
// end-to-end tests. Each stops what it starts when the test ends.

// StartBroker starts an embedded broker holding topics with the given
// number of partitions and returns its addresses.
func StartBroker(t testing.TB, partitions int, topics ...string) []string {
	t.Helper()
	b, err := broker.Start(broker.Options{Partitions: partitions, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b.Addrs()
}

// StartRedis starts an in-process Redis and returns its address, a client
// and a function that stops the server early (to test an outage).
func StartRedis(t testing.TB) (addr string, rdb redis.UniversalClient, stop func()) {
	t.Helper()
	addr, stop, err := redisserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	rdb, err = redisflag.Dial(context.Background(), redisflag.Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return addr, rdb, stop
}

// DeleteKeys deletes the keys of a Redis shared between tests whose names
// start with pattern's literal prefix (a SCAN MATCH pattern).
func DeleteKeys(ctx context.Context, rdb redis.UniversalClient, pattern string) {
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		rdb.Del(ctx, iter.Val())
	}
}

// WaitFor polls cond every 5 ms and returns how long it took to hold, or
// fails the test after limit.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return WaitEvery(t, limit, 5*time.Millisecond, what, cond)
}

// WaitEvery is WaitFor polling every interval, for a condition that costs
// more to check (an HTTP scrape, a subprocess).
func WaitEvery(t testing.TB, limit, interval time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return WaitExplained(t, limit, interval, cond, func() string { return what })
}

// WaitExplained is WaitEvery whose failure message explain writes when the
// limit has passed, so that it can show the last state cond saw (a
// snapshot, a process's output).
func WaitExplained(t testing.TB, limit, interval time.Duration, cond func() bool, explain func() string) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", explain(), limit)
			return time.Since(start) // for a TB whose Fatalf returns
		}
		time.Sleep(interval)
	}
	return time.Since(start)
}

// StaysBlocked runs fn in the background, fails the test if fn returns
// within d (it should be waiting on something the test withholds, such as
// Redis), and returns a channel that yields fn's error once it does return.
func StaysBlocked(t testing.TB, d time.Duration, what string, fn func() error) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		t.Fatalf("%s returned within %v (err %v); it should still be waiting", what, d, err)
	case <-time.After(d):
	}
	return done
}

// InstanceAccuracy annotates every bag of ds in mode (its labels hidden
// when inductive) and returns the fraction of instances whose predicted
// label is the ground truth; a model that predicts no instance labels
// scores 0 on the bag.
func InstanceAccuracy(t testing.TB, m models.Model, ds *mil.Dataset, mode models.Mode) float64 {
	t.Helper()
	right, n := 0, 0
	for i := range ds.Bags {
		b := ds.Bags[i]
		if mode == models.Inductive {
			b.Labels = nil
		}
		a, err := m.Annotate(context.Background(), &b, mode)
		if err != nil {
			t.Fatal(err)
		}
		for j, l := range b.InstanceLabels {
			n++
			if a.InstanceLabels != nil && a.InstanceLabels[j] == l {
				right++
			}
		}
	}
	return float64(right) / float64(n)
}

// Logger returns a logger for the services under test: debug output on
// stderr with -v, nothing otherwise.
func Logger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// SmallDataset returns n separable toy bags over three classes in two
// dimensions: each bag has three instances near the centres of two
// classes, both its labels, and its instance labels.
func SmallDataset(n int) *mil.Dataset {
	ds := &mil.Dataset{Name: "toy", Classes: []string{"a", "b", "c"}, Dim: 2}
	centers := [][]float64{{0, 0}, {5, 0}, {0, 5}}
	for i := range n {
		c1, c2 := i%3, (i+1)%3
		b := mil.Bag{ID: fmt.Sprintf("bag-%04d", i)}
		for j, c := range []int{c1, c2, c1} {
			x := []float64{centers[c][0] + 0.1*float64(j), centers[c][1] - 0.1*float64(i%5)}
			b.Instances = append(b.Instances, x)
			b.InstanceLabels = append(b.InstanceLabels, c)
		}
		b.Labels = []int{min(c1, c2), max(c1, c2)}
		ds.Bags = append(ds.Bags, b)
	}
	return ds
}

// PublishModel fits the centroid kind on ds with params, stores it in reg
// and makes it current; it returns the version.
func PublishModel(t testing.TB, reg *featurestore.Registry, ds *mil.Dataset, params models.Params) string {
	t.Helper()
	m, err := CentroidKind().Fit(context.Background(), ds, models.FitOptions{Params: params})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := models.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := reg.Put(context.Background(), blob, featurestore.VersionMeta{})
	if err != nil {
		t.Fatal(err)
	}
	// Forced: tests set the registry up as they need it, a change of
	// input contract included (as `mimlctl models promote --force` does).
	if err := reg.Promote(context.Background(), meta.Version, featurestore.Force()); err != nil {
		t.Fatal(err)
	}
	return meta.Version
}

// CommandCase is one invocation of a command and what it must do.
type CommandCase struct {
	Args   []string
	Code   int      // exit code
	Stderr []string // substrings of the standard error
}

// CheckCommand runs a command's run function (its main but for os.Exit)
// on each case and checks the exit code and the standard error.
func CheckCommand(t *testing.T, name string, run func(args []string, stdout, stderr io.Writer) int, cases []CommandCase) {
	t.Helper()
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		code := run(tc.Args, &stdout, &stderr)
		if code != tc.Code {
			t.Errorf("%s %q exits %d, want %d; stderr:\n%s", name, tc.Args, code, tc.Code, stderr.String())
		}
		for _, w := range tc.Stderr {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s %q: stderr lacks %q:\n%s", name, tc.Args, w, stderr.String())
			}
		}
	}
}

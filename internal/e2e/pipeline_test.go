package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestKillAnnotatorWithBatchesInFlight SIGKILLs the only annotator while
// many small batches are in flight and commits are 300 ms apart, so the
// kill lands with outputs written and acknowledged but not committed, and
// with later batches acknowledged before earlier ones. The restarted
// annotator must redeliver (duplicates prove the kill left uncommitted,
// acknowledged work) and no bag id may be missing. Catches a commit that
// runs ahead of an unacknowledged batch (an out-of-order acknowledgement
// committing past it) and a drain-free exit that loses fetched bags.
func TestKillAnnotatorWithBatchesInFlight(t *testing.T) {
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	e.promote(blob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := e.tail(ctx)
	pipelined := annotatorOpts{extra: []string{"--batch-size", "4", "--max-in-flight", "16", "--commit-interval", "300ms", "--log-level", "info"}}
	victim := e.startAnnotator("victim", pipelined)
	pub := e.publisher(0.5)
	published := publishPaced(ctx, pub, ds, 100*time.Millisecond)
	// Kill once the victim is a working member (see TestKillAnnotatorMidStream
	// on the kfake join limitation), in the middle of the stream.
	streamtest.WaitFor(t, 60*time.Second, "victim annotating", func() bool {
		ids, _, _ := out.counts()
		return ids >= len(ds.Bags)/2
	})
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	killedAt, _, _ := out.counts()
	e.startAnnotator("restarted", pipelined)
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	out.waitIDs(t, len(ds.Bags), 90*time.Second)
	ids, total, dead := out.counts()
	t.Logf("killed after %d of %d bags; %d annotated, %d annotations (%d redelivered), %d dead letters", killedAt, len(ds.Bags), ids, total, total-ids, dead)
	out.mu.Lock()
	defer out.mu.Unlock()
	for _, b := range ds.Bags {
		if len(out.anns[b.ID]) == 0 {
			t.Errorf("bag %s missing after the kill", b.ID)
		}
	}
	if total == ids {
		t.Errorf("no bag redelivered: the kill did not land with acknowledged, uncommitted batches, so the test proved nothing")
	}
	if dead != 0 {
		t.Errorf("%d dead letters", dead)
	}
}

// soakEnv turns the soak on (it takes over a minute and loads the
// machine: not for `make test`); MIMLSTREAM_SOAK_DURATION changes its
// length (default 60s).
const soakEnv = "MIMLSTREAM_SOAK"

// TestSoak runs ingest, an annotator and the retrainer as processes, first
// as fast as they go to measure the maximum rate, then at 80% of it for
// the soak duration. Every bag published must be annotated (nothing lost)
// and the resident memory of every service must stay flat: the RSS
// samples are logged, and the last third's median may exceed the second
// third's by at most 25% and 64 MiB. Catches a leak that grows with the
// messages processed (an offset tracker or key gate that never forgets, a
// span or buffer kept per bag) and loss under sustained load.
func TestSoak(t *testing.T) {
	dur := soakDuration(t)
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	e.promote(blob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := e.countIDs(ctx)
	ann := e.startAnnotator("soak", annotatorOpts{extra: []string{"--log-level", "info"}})
	ret := e.spawn("retrainer", "soak", e.retrainerArgs(5000, "", "--window", "2000", "--log-level", "info"))
	streamtest.WaitFor(t, 60*time.Second, "annotator serving", func() bool {
		return strings.Contains(ann.logText(), "consuming")
	})

	// The maximum: 10 passes over MSCV2 as fast as ingest publishes them.
	const maxPasses = 10
	start := time.Now()
	ing := e.ingest(t, "max", 0, func(w io.Writer) error { return writePasses(w, ds, "max", maxPasses) })
	want := maxPasses * len(ds.Bags)
	seen.wait(t, "max", want, 5*time.Minute)
	maxRate := float64(want) / time.Since(start).Seconds()
	<-ing.done
	rate := 0.8 * maxRate
	passes := int(rate*dur.Seconds())/len(ds.Bags) + 1
	t.Logf("maximum %.0f bags/s end to end; soaking at %.0f bags/s for %v (%d bags)", maxRate, rate, dur, passes*len(ds.Bags))

	// The soak, sampling RSS every 5 s.
	ing = e.ingest(t, "soak", rate, func(w io.Writer) error { return writePasses(w, ds, "soak", passes) })
	samples := sampleRSS(t, ing, dur+5*time.Minute, map[string]*annotator{"annotator": ann, "retrainer": ret, "ingest": ing})
	seen.wait(t, "soak", passes*len(ds.Bags), 2*time.Minute)
	checkFlat(t, samples)
	ids, dups := seen.count("soak")
	t.Logf("all %d bags published annotated (%d annotations redelivered)", ids, dups)
}

// sampleRSS samples the RSS of procs every 5 s until ing exits (failing
// the test if it has not after limit, or failed), keyed by procs' names.
func sampleRSS(t *testing.T, ing *annotator, limit time.Duration, procs map[string]*annotator) map[string][]int64 {
	t.Helper()
	samples := map[string][]int64{}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	deadline := time.After(limit)
	for {
		select {
		case <-ing.done:
			if ing.err != nil {
				t.Fatalf("ingest: %v\n%s", ing.err, ing.logText())
			}
			return samples
		case <-deadline:
			t.Fatal("ingest did not finish")
		case <-tick.C:
			for name, p := range procs {
				if kb, err := rssKB(p.cmd.Process.Pid); err == nil {
					samples[name] = append(samples[name], kb)
				}
			}
		}
	}
}

// checkFlat logs each process's RSS samples and fails the test if one's
// last third grew by more than a quarter (and 64 MiB) over its middle third.
func checkFlat(t *testing.T, samples map[string][]int64) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(samples)) {
		s := samples[name]
		t.Logf("RSS MiB of %-9s every 5 s: %v", name, mib(s))
		if len(s) < 6 {
			continue
		}
		mid, last := median(s[len(s)/3:2*len(s)/3]), median(s[2*len(s)/3:])
		if float64(last) > 1.25*float64(mid) && last-mid > 64<<10 {
			t.Errorf("%s RSS grew from a median of %d MiB to %d MiB over the soak", name, mid>>10, last>>10)
		}
	}
}

// soakDuration skips a soak unless soakEnv is set, and returns how long
// it lasts: MIMLSTREAM_SOAK_DURATION, or a minute.
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	if os.Getenv(soakEnv) == "" {
		t.Skipf("set %s=1 to run the soak (make soak)", soakEnv)
	}
	dur := time.Minute
	if v := os.Getenv("MIMLSTREAM_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		dur = d
	}
	return dur
}

// ingest runs `ingest --jsonl -` as a process fed by feed, at rate bags/s
// (0: as fast as acknowledged).
func (e *env) ingest(t *testing.T, name string, rate float64, feed func(io.Writer) error) *annotator {
	t.Helper()
	p := &annotator{name: name, log: &bytes.Buffer{}, done: make(chan struct{})}
	args := append([]string{"--brokers", strings.Join(e.brokers, ","), "--jsonl", "-", "--rate", strconv.FormatFloat(rate, 'f', 0, 64),
		"--label-fraction", "0.5", "--create-topics=false", "--progress=false", "--log-level", "info"}, e.secArgs...)
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), roleEnv+"=ingest")
	p.cmd.Stdout = &syncWriter{w: p.log}
	p.cmd.Stderr = p.cmd.Stdout
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		bw := bufio.NewWriterSize(stdin, 1<<20)
		if err := feed(bw); err == nil {
			_ = bw.Flush()
		}
		stdin.Close()
	}()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// writePasses writes passes copies of ds as JSON lines, the ids of pass i
// prefixed "tag-i/".
func writePasses(w io.Writer, ds *mil.Dataset, tag string, passes int) error {
	for i := range passes {
		for _, b := range ds.Bags {
			b.ID = fmt.Sprintf("%s-%d/%s", tag, i, b.ID)
			raw, err := json.Marshal(wire.NewBagMessage(&b, ds.Name, ds.Dim, ds.Classes, false))
			if err != nil {
				return err
			}
			if _, err := w.Write(append(raw, '\n')); err != nil {
				return err
			}
		}
	}
	return nil
}

// idCounter counts the distinct annotated bag ids per tag (the id's prefix
// before the first '-') without keeping the annotations.
type idCounter struct {
	mu    sync.Mutex
	ids   map[string]map[string]bool
	total map[string]int
}

func (e *env) countIDs(ctx context.Context) *idCounter {
	c := &idCounter{ids: map[string]map[string]bool{}, total: map[string]int{}}
	go func() {
		err := kafkaio.Tail(ctx, e.brokers, e.sec, e.topics.Annotations, func(m kafka.Message) error {
			var a struct {
				BagID string `json:"bag_id"`
			}
			if err := json.Unmarshal(m.Value, &a); err != nil {
				return err
			}
			tag, _, _ := strings.Cut(a.BagID, "-")
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.ids[tag] == nil {
				c.ids[tag] = map[string]bool{}
			}
			c.ids[tag][a.BagID] = true
			c.total[tag]++
			return nil
		})
		if err != nil {
			e.t.Errorf("count annotations: %v", err)
		}
	}()
	return c
}

// count returns the distinct ids of tag and the redelivered annotations.
func (c *idCounter) count(tag string) (ids, dups int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids[tag]), c.total[tag] - len(c.ids[tag])
}

func (c *idCounter) wait(t *testing.T, tag string, n int, limit time.Duration) {
	t.Helper()
	streamtest.WaitFor(t, limit, fmt.Sprintf("%d %s bags annotated", n, tag), func() bool {
		ids, _ := c.count(tag)
		return ids >= n
	})
}

// rssKB returns the resident set size of a process in KiB.
func rssKB(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for l := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

func mib(kb []int64) []int64 {
	out := make([]int64, len(kb))
	for i, v := range kb {
		out[i] = v >> 10
	}
	return out
}

func median(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

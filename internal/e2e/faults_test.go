package e2e

// The failure modes found by fault injection, each shown with the
// services as separate processes on the embedded broker and the real Redis:
// large messages never stall a partition, a poison training bag never stops
// the refits, a restarted retrainer does not refit the whole topic again.
// TestChaos (MIMLSTREAM_CHAOS=1, make chaos) runs them all at once while
// the services are SIGKILLed at random.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// limit is the message size limit of the services in these tests: their
// default, which the broker's max.message.bytes (Kafka's default,
// 1048588) does not lower.
const limit = kafkaio.DefaultMaxMessageBytes

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// bigBag returns a valid unlabeled bag of id made of MSCV2 instances (as
// many as make its message about size bytes).
func bigBag(ds *mil.Dataset, id string, size int) wire.BagMessage {
	m := wire.BagMessage{SchemaVersion: 1, ID: id, Source: "mscv2", Dim: ds.Dim}
	n := 100
	for {
		for i := 0; len(m.Instances) < n; i++ {
			b := ds.Bags[i%len(ds.Bags)]
			m.Instances = append(m.Instances, b.Instances...)
		}
		got := len(mustJSON(m))
		if got >= size {
			return m
		}
		n = len(m.Instances) * size / got
		if n <= len(m.Instances) {
			n = len(m.Instances) + 1
		}
	}
}

// bigInvalid returns about 226 KB bags, each invalid for one reason.
func bigInvalid(ds *mil.Dataset, id string, kind int) ([]byte, wire.Reason) {
	m := bigBag(ds, id, 226_000)
	switch kind % 6 {
	case 0: // consistent, but not the model's dimension
		for i := range m.Instances {
			m.Instances[i] = m.Instances[i][:ds.Dim-1]
		}
		m.Dim = ds.Dim - 1
		return mustJSON(m), wire.ReasonDimension
	case 1:
		raw := mustJSON(m)
		i := bytes.LastIndex(raw, []byte("],["))
		return append(append(append([]byte{}, raw[:i+3]...), []byte(`"NaN",`)...), raw[i+3:]...), wire.ReasonNonFinite
	case 2: // 23 labels: over orlr's exact E-step cap (16)
		m.Classes = ds.Classes
		for c := range ds.Classes {
			m.Labels = append(m.Labels, c)
		}
		return mustJSON(m), wire.ReasonLabelSetTooLarge
	case 3:
		m.Classes = append([]string{"other"}, ds.Classes[1:]...)
		m.Labels = []int{0}
		return mustJSON(m), wire.ReasonVocabulary
	case 4:
		raw := mustJSON(m)
		return raw[:len(raw)-1], wire.ReasonMalformedJSON
	default:
		raw := mustJSON(m)
		return append(raw[:len(raw)-1], []byte(`,"unknown":1}`)...), wire.ReasonSchema
	}
}

// writer returns a producer for the test's own writes, allowing requests of
// up to maxBytes.
func (e *env) writer(maxBytes int) *kafka.Writer {
	e.t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(e.brokers...), Transport: e.sec.Transport(), Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: 2 * time.Millisecond, BatchBytes: int64(maxBytes)}
	e.t.Cleanup(func() { w.Close() })
	return w
}

func (e *env) write(ctx context.Context, w *kafka.Writer, topic string, keys []string, raws [][]byte) {
	e.t.Helper()
	msgs := make([]kafka.Message, len(raws))
	for i := range raws {
		msgs[i] = kafka.Message{Topic: topic, Key: []byte(keys[i]), Value: raws[i]}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		e.t.Fatal(err)
	}
}

// allowLarge raises a topic's max.message.bytes, so a faulty producer can
// put messages larger than the services' limit on it.
func (e *env) allowLarge(topic string, maxBytes int) {
	e.t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(e.brokers...), Transport: e.sec.Transport(), Timeout: 10 * time.Second}
	resp, err := cl.AlterConfigs(context.Background(), &kafka.AlterConfigsRequest{Resources: []kafka.AlterConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafka.AlterConfigRequestConfig{{Name: "max.message.bytes", Value: fmt.Sprint(maxBytes)}}}}})
	if err == nil {
		for _, r := range resp.Errors {
			err = r
		}
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// readAt returns the message at a topic's partition and offset.
func (e *env) readAt(topic string, partition int, offset int64) kafka.Message {
	e.t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: e.brokers, Dialer: e.sec.Dialer(), Topic: topic, Partition: partition, MinBytes: 1, MaxBytes: 64 << 20, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := r.ReadMessage(ctx)
	if err != nil {
		e.t.Fatalf("read %s/%d@%d: %v", topic, partition, offset, err)
	}
	return m
}

// rawDead collects the dead-letter topic's records as produced.
type rawDead struct {
	mu   sync.Mutex
	msgs []kafka.Message
}

func (e *env) tailDead(ctx context.Context) *rawDead {
	d := &rawDead{}
	go func() {
		err := kafkaio.Tail(ctx, e.brokers, e.sec, e.topics.DeadLetter, func(m kafka.Message) error {
			d.mu.Lock()
			d.msgs = append(d.msgs, m)
			d.mu.Unlock()
			return nil
		})
		if err != nil {
			e.t.Errorf("tail dead letters: %v", err)
		}
	}()
	return d
}

// byKey returns the dead letters decoded, by key (the last of each key).
func (d *rawDead) byKey(t *testing.T) map[string]wire.DeadLetter {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]wire.DeadLetter{}
	for _, m := range d.msgs {
		var dl wire.DeadLetter
		if err := json.Unmarshal(m.Value, &dl); err != nil {
			t.Fatalf("dead letter not JSON: %v", err)
		}
		out[dl.Key] = dl
	}
	return out
}

func (d *rawDead) waitKeys(t *testing.T, keys []string, limit time.Duration) map[string]wire.DeadLetter {
	t.Helper()
	var got map[string]wire.DeadLetter
	missing := 0
	streamtest.WaitExplained(t, limit, 50*time.Millisecond, func() bool {
		got, missing = d.byKey(t), 0
		for _, k := range keys {
			if _, ok := got[k]; !ok {
				missing++
			}
		}
		return missing == 0
	}, func() string { return fmt.Sprintf("%d of %d dead letters missing", missing, len(keys)) })
	return got
}

// watchStall polls an annotator's /readyz until ctx ends and returns the
// first answer that reports a stall, if any.
func watchStall(ctx context.Context, a *annotator) <-chan string {
	out := make(chan string, 1)
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			resp, err := http.Get("http://" + a.health + "/readyz")
			if err == nil {
				var b bytes.Buffer
				_, _ = b.ReadFrom(resp.Body)
				resp.Body.Close()
				if strings.Contains(b.String(), "stalled") {
					out <- b.String()
					return
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return out
}

// TestOversizeNeverStalls writes, straight to the bags topic as a faulty
// producer would, 24 invalid bags of 226 KB (six reasons) and 4 bags of
// 1.5 MB (over the annotator's 1 MiB limit; the topic is raised to allow
// them), then 200 valid bags on the same partitions. Every dead letter is
// written and within the limit: the 226 KB originals whole, the 1.5 MB ones
// as a prefix with their length and SHA-256, pointing at the offset where
// the original still is. All 200 valid bags are annotated and no partition
// stalls (the annotator's /readyz never reports one; bound 2 s).
func TestOversizeNeverStalls(t *testing.T) {
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	e.promote(blob)
	e.allowLarge(e.topics.Annotate, 8<<20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := e.tail(ctx)
	dead := e.tailDead(ctx)
	a := e.startAnnotator("a1", annotatorOpts{listen: true, extra: []string{"--stall-after", "2s"}})
	streamtest.WaitFor(t, 30*time.Second, "annotator ready", func() bool { return a.readyVersion() != "" })
	stalls := watchStall(ctx, a)

	start := time.Now()
	w := e.writer(8 << 20)
	want := map[string]wire.Reason{}
	raws := map[string][]byte{}
	var keys []string
	var vals [][]byte
	for i := range 24 {
		key := fmt.Sprintf("bad-%02d", i)
		raw, reason := bigInvalid(ds, key, i)
		want[key], raws[key] = reason, raw
		keys, vals = append(keys, key), append(vals, raw)
	}
	for i := range 4 {
		key := fmt.Sprintf("huge-%d", i)
		raw := mustJSON(bigBag(ds, key, 1_500_000))
		want[key], raws[key] = wire.ReasonOversize, raw
		keys, vals = append(keys, key), append(vals, raw)
	}
	e.write(ctx, w, e.topics.Annotate, keys, vals)
	var goodKeys []string
	var goodVals [][]byte
	for i := range 200 {
		b := ds.Bags[i]
		goodKeys, goodVals = append(goodKeys, b.ID), append(goodVals, mustJSON(wire.NewBagMessage(&b, "mscv2", ds.Dim, ds.Classes, false)))
	}
	e.write(ctx, w, e.topics.Annotate, goodKeys, goodVals)

	out.waitIDs(t, 200, 90*time.Second)
	got := dead.waitKeys(t, keys, 60*time.Second)
	t.Logf("24 invalid 226 KB bags, 4 of 1.5 MB and 200 valid: all out in %v", time.Since(start).Round(time.Millisecond))
	dead.mu.Lock()
	largest := 0
	for _, m := range dead.msgs {
		largest = max(largest, len(m.Value))
		if len(m.Value) > limit || kafkaio.RecordSize(m) > kafkaio.RecordLimit(limit) {
			t.Errorf("dead letter of %d bytes (record %d) over the %d-byte limit", len(m.Value), kafkaio.RecordSize(m), limit)
		}
	}
	n := len(dead.msgs)
	dead.mu.Unlock()
	t.Logf("%d dead letters, the largest %d bytes (limit %d)", n, largest, limit)
	for _, key := range keys {
		d, raw := got[key], raws[key]
		if d.Reason != want[key] || d.Stage != wire.StageAnnotate || d.Topic != e.topics.Annotate || d.OriginalSize != len(raw) {
			t.Errorf("%s: dead letter reason %s stage %s topic %s size %d, want %s of %d bytes", key, d.Reason, d.Stage, d.Topic, d.OriginalSize, want[key], len(raw))
			continue
		}
		if want[key] != wire.ReasonOversize {
			if !bytes.Equal(d.Original, raw) || d.OriginalSHA256 != "" {
				t.Errorf("%s: a 226 KB original not kept whole", key)
			}
			continue
		}
		sum := sha256.Sum256(raw)
		if !bytes.HasPrefix(raw, d.Original) || len(d.Original) == 0 || d.OriginalSHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: kept %d bytes, sha256 %q: not a prefix and the original's hash", key, len(d.Original), d.OriginalSHA256)
		}
		orig := e.readAt(d.Topic, d.Partition, d.Offset)
		if s := sha256.Sum256(orig.Value); hex.EncodeToString(s[:]) != d.OriginalSHA256 || string(orig.Key) != key {
			t.Errorf("%s: %s/%d@%d does not hold the original", key, d.Topic, d.Partition, d.Offset)
		}
	}
	select {
	case s, ok := <-stalls:
		if ok {
			t.Errorf("/readyz reported a stall: %s", s)
		}
	default:
	}
	if strings.Contains(a.logText(), "write stalled") {
		t.Error("the annotator logged a stalled write")
	}
}

// TestOversizeIngestJSONLAndHTTP publishes valid bags of 226 KB (each under
// the broker's 1 MiB; packed 16 MiB to a request they were refused
// forever): 40 with `ingest --jsonl` and 16 in one POST /bags to `ingest
// --listen`. Both publish everything (200 OK) and every bag is annotated.
func TestOversizeIngestJSONLAndHTTP(t *testing.T) {
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	e.promote(blob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := e.tail(ctx)
	e.startAnnotator("a1", annotatorOpts{})
	brokers := strings.Join(e.brokers, ",")

	var jsonl bytes.Buffer
	for i := range 40 {
		jsonl.Write(mustJSON(bigBag(ds, fmt.Sprintf("jsonl-%02d", i), 226_000)))
		jsonl.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "big.jsonl")
	if err := os.WriteFile(path, jsonl.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	ictx, icancel := context.WithTimeout(ctx, 60*time.Second)
	start := time.Now()
	err := ingest.Command(ictx, service.Env{Stdout: &stdout, Stderr: &stderr}, []string{"--brokers", brokers, "--jsonl", path, "--create-topics=false", "--progress=false"})
	icancel()
	if err != nil || !strings.Contains(stdout.String(), "published 40 bags") {
		t.Fatalf("ingest --jsonl of 40 bags of 226 KB: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("ingest --jsonl: 40 bags of 226 KB (%d MB) published in %v", jsonl.Len()>>20, time.Since(start).Round(time.Millisecond))

	addr := freeAddr(t)
	lctx, lcancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- ingest.Command(lctx, service.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}, []string{"--brokers", brokers, "--listen", addr, "--create-topics=false"})
	}()
	streamtest.WaitFor(t, 20*time.Second, "ingest listening", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	var body bytes.Buffer
	for i := range 16 {
		body.Write(mustJSON(bigBag(ds, fmt.Sprintf("http-%02d", i), 226_000)))
		body.WriteByte('\n')
	}
	client := http.Client{Timeout: 60 * time.Second}
	start = time.Now()
	resp, err := client.Post("http://"+addr+"/bags", "application/x-ndjson", &body)
	if err != nil {
		t.Fatalf("POST of 16 bags of 226 KB: %v", err)
	}
	var reply bytes.Buffer
	_, _ = reply.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST of 16 bags of 226 KB: %d %s", resp.StatusCode, reply.String())
	}
	t.Logf("POST /bags: 16 bags of 226 KB answered %d in %v: %s", resp.StatusCode, time.Since(start).Round(time.Millisecond), strings.TrimSpace(reply.String()))
	lcancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	out.waitIDs(t, 56, 90*time.Second)
	if _, _, d := out.counts(); d != 0 {
		t.Errorf("%d dead letters for valid bags", d)
	}
}

// retrainerArgs are the flags of a retrainer process over the test's
// broker and registry: ORed-LR with a quick fit.
func (e *env) retrainerArgs(every int, listen string, extra ...string) []string {
	return append([]string{"--brokers", strings.Join(e.brokers, ","), "--redis", e.redis, "--registry-prefix", e.prefix + ":models",
		"--model", "orlr", "--param", "iters=2", "--param", "msteps=5", "--every", fmt.Sprint(every), "--min-bags", "50",
		"--listen", listen, "--create-topics=false"}, extra...)
}

// refits counts the refits a retrainer process logged.
func refits(p *annotator) int { return strings.Count(p.logText(), "msg=refit ") }

// labeled returns the wire form of the bags of ds, with their labels, under
// ids made unique by suffix.
func labeled(ds *mil.Dataset, bags []mil.Bag, suffix string) (keys []string, raws [][]byte) {
	for i := range bags {
		b := bags[i]
		b.ID += suffix
		keys, raws = append(keys, b.ID), append(raws, mustJSON(wire.NewBagMessage(&b, "mscv2", ds.Dim, ds.Classes, false)))
	}
	return keys, raws
}

// TestPoisonTrainingBagsNeverStopRefits puts, among MSCV2 bags on the
// training topic, a bag with all 23 labels (over orlr's exact E-step cap of
// 16; it used to fail every refit until it left the window) and a bag of
// another dimension. The retrainer process dead-letters both with their
// reasons, keeps them out of its window, and every refit succeeds.
func TestPoisonTrainingBagsNeverStopRefits(t *testing.T) {
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	e.promote(blob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dead := e.tailDead(ctx)
	r := e.spawn("retrainer", "r1", e.retrainerArgs(60, ""))
	streamtest.WaitFor(t, 30*time.Second, "retrainer following", func() bool { return strings.Contains(r.logText(), `msg="window rebuilt"`) })

	w := e.writer(limit)
	keys, raws := labeled(ds, ds.Bags[:100], "")
	e.write(ctx, w, e.topics.Train, keys, raws)
	all := wire.NewBagMessage(&mil.Bag{ID: "poison-labels", Instances: ds.Bags[0].Instances, Labels: make([]int, len(ds.Classes))}, "mscv2", ds.Dim, ds.Classes, false)
	for c := range all.Labels {
		all.Labels[c] = c
	}
	short := make([][]float64, len(ds.Bags[1].Instances))
	for i, x := range ds.Bags[1].Instances {
		short[i] = x[:ds.Dim-1]
	}
	wrongDim := wire.NewBagMessage(&mil.Bag{ID: "poison-dim", Instances: short, Labels: []int{0}}, "mscv2", ds.Dim-1, ds.Classes, false)
	e.write(ctx, w, e.topics.Train, []string{"poison-labels", "poison-dim"}, [][]byte{mustJSON(all), mustJSON(wrongDim)})
	keys, raws = labeled(ds, ds.Bags[100:200], "")
	e.write(ctx, w, e.topics.Train, keys, raws)

	// 200 admitted bags, Every 60: three refits, two of them after the
	// poison arrived.
	streamtest.WaitFor(t, 120*time.Second, "three refits", func() bool { return refits(r) >= 3 })
	got := dead.waitKeys(t, []string{"poison-labels", "poison-dim"}, 20*time.Second)
	for key, reason := range map[string]wire.Reason{"poison-labels": wire.ReasonLabelSetTooLarge, "poison-dim": wire.ReasonDimension} {
		if d := got[key]; d.Reason != reason || d.Stage != wire.StageRetrain || d.Topic != e.topics.Train || d.Offset < 0 {
			t.Errorf("%s: dead letter %+v, want reason %s", key, d, reason)
		}
	}
	log := r.logText()
	if strings.Contains(log, "refit failed") {
		t.Errorf("a refit failed:\n%s", grep(log, "refit failed"))
	}
	t.Logf("%d refits, all succeeded; dead letters: %s (%s), %s (%s)", refits(r), got["poison-labels"].Reason, got["poison-labels"].Error,
		got["poison-dim"].Reason, got["poison-dim"].Error)
}

func grep(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, "\n")
}

// TestRetrainerRestartRefitsAtMostOnce stops and restarts the retrainer
// process over a training topic of 1,182 bags (MSCV2 twice), by SIGTERM and
// by SIGKILL, also in the middle of its rebuild. Replaying the window used
// to refit every --every bags (11 refits here); now a restart refits once
// when Every bags lie beyond the current model's training offsets, and not
// at all otherwise.
func TestRetrainerRestartRefitsAtMostOnce(t *testing.T) {
	e := newEnv(t)
	ds, _ := mscv2Model(t)
	ctx := context.Background()
	w := e.writer(limit)
	for round := range 2 {
		keys, raws := labeled(ds, ds.Bags, fmt.Sprintf("~%d", round))
		e.write(ctx, w, e.topics.Train, keys, raws)
	}
	const every = 100
	// run starts a retrainer and waits until it has rebuilt its window and
	// then for long enough that a refit would have shown.
	run := func(name string) *annotator {
		r := e.spawn("retrainer", name, e.retrainerArgs(every, ""))
		streamtest.WaitFor(t, 60*time.Second, name+" rebuilt its window", func() bool { return strings.Contains(r.logText(), `msg="window rebuilt"`) })
		if strings.Contains(grep(r.logText(), "window rebuilt"), "refit=true") {
			streamtest.WaitFor(t, 60*time.Second, name+" refit", func() bool { return refits(r) > 0 || strings.Contains(r.logText(), "refit failed") })
		}
		time.Sleep(3 * time.Second) // long enough for another refit to show
		return r
	}
	stop := func(r *annotator, sig syscall.Signal) {
		if err := r.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		<-r.done
		if sig == syscall.SIGTERM && r.err != nil {
			t.Fatalf("%s exited with %v after SIGTERM", r.name, r.err)
		}
	}
	versions := func() int {
		vs, err := e.reg.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(vs)
	}
	check := func(r *annotator, want int, what string) {
		t.Helper()
		if n := refits(r); n != want {
			t.Errorf("%s: %d refits, want %d\n%s", what, n, want, grep(r.logText(), "refit"))
		} else {
			t.Logf("%s: %d refit(s); %s", what, n, strings.TrimSpace(grep(r.logText(), "window rebuilt")))
		}
	}

	r := run("first")
	check(r, 1, "fresh start over 1,182 bags (the first model)")
	stop(r, syscall.SIGTERM)
	r = run("after-sigterm")
	check(r, 0, "SIGTERM restart, nothing new")
	stop(r, syscall.SIGKILL)
	r = run("after-sigkill")
	check(r, 0, "SIGKILL restart, nothing new")

	// 50 new bags (fewer than --every), then SIGKILL in the middle of the
	// rebuild.
	keys, raws := labeled(ds, ds.Bags[:50], "~new1")
	e.write(ctx, w, e.topics.Train, keys, raws)
	stop(r, syscall.SIGKILL)
	mid := e.spawn("retrainer", "killed-mid-rebuild", e.retrainerArgs(every, ""))
	streamtest.WaitFor(t, 30*time.Second, "rebuild started", func() bool { return strings.Contains(mid.logText(), "rebuilding its window") })
	stop(mid, syscall.SIGKILL)
	r = run("after-sigkill-mid-rebuild")
	check(r, 0, "SIGKILL mid-rebuild, 50 new bags (< --every 100)")

	// 150 more: 200 beyond the model's offsets, one refit.
	keys, raws = labeled(ds, ds.Bags[50:200], "~new1")
	e.write(ctx, w, e.topics.Train, keys, raws)
	stop(r, syscall.SIGTERM)
	before := versions()
	r = run("after-new-data")
	check(r, 1, "SIGTERM restart with 200 new bags (>= --every 100)")
	if v := versions(); v != before+1 {
		t.Errorf("%d versions stored by the restart, want 1", v-before)
	}
	_, meta, err := e.reg.Current(ctx)
	if err != nil || len(meta.TrainOffsets) == 0 {
		t.Errorf("current %s without training offsets (%v)", meta.Version, err)
	}
	stop(r, syscall.SIGKILL)
	r = run("last")
	check(r, 0, "SIGKILL restart after that refit")
}

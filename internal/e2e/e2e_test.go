package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/baseline"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/retrain"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// instanceAccuracy scores annotations against the held-back instance labels.
func instanceAccuracy(ds *mil.Dataset, anns map[string][]wire.AnnotationMessage, mode string) (float64, int) {
	right, n := 0, 0
	for _, b := range ds.Bags {
		as := anns[b.ID]
		if len(as) == 0 || (mode != "" && as[0].Mode != mode) {
			continue
		}
		for i, l := range b.InstanceLabels {
			n++
			if i < len(as[0].InstanceLabels) && as[0].InstanceLabels[i] == l {
				right++
			}
		}
	}
	return float64(right) / float64(max(n, 1)), n
}

// dummyAccuracy is the instance accuracy of the Dummy baseline, fitted and
// applied like the model under test.
func dummyAccuracy(t *testing.T, ds *mil.Dataset, mode models.Mode) float64 {
	m, err := baseline.DummyKind().Fit(context.Background(), ds, models.FitOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return streamtest.InstanceAccuracy(t, m, ds, mode)
}

// TestEndToEndMSCV2 streams MSCV2 (half the bags keep their labels) through
// two annotator processes serving ORed-LR from the registry.
func TestEndToEndMSCV2(t *testing.T) {
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	version := e.promote(blob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := e.tail(ctx)
	e.startAnnotator("a1", annotatorOpts{})
	e.startAnnotator("a2", annotatorOpts{})
	pub := e.publisher(0.5)
	if rej, err := pub.PublishDataset(ctx, ds, ds.Bags); err != nil || len(rej) > 0 {
		t.Fatalf("publish: %v %v", rej, err)
	}
	out.waitIDs(t, len(ds.Bags), 90*time.Second)

	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.dead) != 0 {
		t.Errorf("%d dead letters for valid bags: %+v", len(out.dead), out.dead[0])
	}
	// Annotations name the version by its unique id as well, so they stay
	// unambiguous if the registry is reset and vN is reused.
	_, meta, err := e.reg.Current(context.Background())
	if err != nil || meta.ID == "" {
		t.Fatalf("current version has no id: %+v %v", meta, err)
	}
	ids := make([]string, 0, len(out.anns))
	for id, as := range out.anns {
		ids = append(ids, id)
		for _, a := range as {
			if a.ModelVersion != version || a.Model != "orlr" || a.ModelID != meta.ID {
				t.Errorf("bag %s annotated by %s %s (id %q, want %q)", id, a.Model, a.ModelVersion, a.ModelID, meta.ID)
			}
		}
	}
	slices.Sort(ids)
	want := make([]string, len(ds.Bags))
	for i, b := range ds.Bags {
		want[i] = b.ID
	}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("annotated ids differ from published ids (%d vs %d)", len(ids), len(want))
	}
	ind, nInd := instanceAccuracy(ds, out.anns, string(models.Inductive))
	tr, nTr := instanceAccuracy(ds, out.anns, string(models.Transductive))
	dInd, dTr := dummyAccuracy(t, ds, models.Inductive), dummyAccuracy(t, ds, models.Transductive)
	t.Logf("instance accuracy: inductive %.3f over %d instances (Dummy %.3f), transductive %.3f over %d (Dummy %.3f)", ind, nInd, dInd, tr, nTr, dTr)
	if nInd == 0 || nTr == 0 {
		t.Fatal("label fraction 0.5 did not give both modes")
	}
	if ind < dInd+0.2 || tr < dTr+0.2 {
		t.Errorf("accuracy not above the Dummy baseline by a wide margin")
	}
}

// TestKillAnnotatorMidStream SIGKILLs an annotator process while bags are
// flowing, restarts it, and checks that no bag id is missing.
func TestKillAnnotatorMidStream(t *testing.T) {
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	e.promote(blob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := e.tail(ctx)
	victim := e.startAnnotator("victim", annotatorOpts{})
	e.startAnnotator("survivor", annotatorOpts{})
	pub := e.publisher(0.5)
	// A paced stream (about 3 s), so the kill lands in the middle of it.
	published := publishPaced(ctx, pub, ds, 100*time.Millisecond)
	// Kill the victim once it is a working member of the group: it has
	// annotated bags. Killing it while its JoinGroup is in flight hits a
	// kfake limitation (pkg/kfake groups.go at the pinned commit
	// 01f206a7e32c, the newest the module proxy serves): group.reply arms
	// the member's session timer only after delivering the response, so a
	// member whose JoinGroup response cannot be delivered gets none, and
	// the leader's SyncGroup (completeLeaderSync -> clearPendingSync) then
	// cancels the pending-sync timer that would have evicted it. The group
	// goes stable with the dead member holding partitions until a later
	// rebalance; a real broker expires it after the session timeout.
	streamtest.WaitFor(t, 60*time.Second, "victim annotating", func() bool {
		out.mu.Lock()
		defer out.mu.Unlock()
		for _, as := range out.anns {
			if as[0].Annotator == "victim" {
				return len(out.anns) < len(ds.Bags)*3/4
			}
		}
		return false
	})
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	killedAt, _, _ := out.counts()
	t.Logf("killed an annotator after %d of %d bags", killedAt, len(ds.Bags))
	e.startAnnotator("victim-restarted", annotatorOpts{})
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	out.waitIDs(t, len(ds.Bags), 90*time.Second)
	ids, total, dead := out.counts()
	t.Logf("%d bags annotated, %d annotations (%d duplicates from redelivery), %d dead letters", ids, total, total-ids, dead)
	out.mu.Lock()
	defer out.mu.Unlock()
	for _, b := range ds.Bags {
		if len(out.anns[b.ID]) == 0 {
			t.Errorf("bag %s missing after the kill", b.ID)
		}
	}
	if dead != 0 {
		t.Errorf("%d dead letters", dead)
	}
}

// TestDeadLettersEndToEnd writes each kind of bad input between good bags
// straight onto the topic (as a faulty producer would) and through the
// ingest endpoint.
func TestDeadLettersEndToEnd(t *testing.T) {
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	e.promote(blob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := e.tail(ctx)
	e.startAnnotator("a1", annotatorOpts{extra: []string{"--max-message-bytes", "20000"}})

	row := "[" + strings.TrimSuffix(strings.Repeat("0.5,", 48), ",") + "]"
	all := make([]string, 23)
	for i := range all {
		all[i] = fmt.Sprint(i)
	}
	classes, _ := json.Marshal(ds.Classes)
	bad := map[string]badRecord{
		"bad-json":   {`{"schema_version":1,"id":"x","dim":48,"instances":[` + row, wire.ReasonMalformedJSON},
		"bad-dim":    {`{"schema_version":1,"id":"x","dim":3,"instances":[[1,2,3]]}`, wire.ReasonDimension},
		"bad-nan":    {`{"schema_version":1,"id":"x","dim":48,"instances":[["NaN"` + strings.Repeat(",0.5", 47) + `]]}`, wire.ReasonNonFinite},
		"bad-inf":    {`{"schema_version":1,"id":"x","dim":48,"instances":[[1e999` + strings.Repeat(",0.5", 47) + `]]}`, wire.ReasonNonFinite},
		"bad-empty":  {`{"schema_version":1,"id":"x","dim":48,"instances":[]}`, wire.ReasonEmptyBag},
		"bad-labels": {`{"schema_version":1,"id":"x","dim":48,"instances":[` + row + `],"labels":[` + strings.Join(all, ",") + `],"classes":` + string(classes) + `}`, wire.ReasonLabelSetTooLarge},
		"bad-big":    {`{"schema_version":1,"id":"x","dim":48,"instances":[` + strings.Repeat(row+",", 200) + row + `]}`, wire.ReasonOversize},
	}
	w := kafkaio.NewWriter(e.brokers, kafkasec.Conn{})
	defer w.Close()
	var msgs []kafka.Message
	goodIDs := []string{}
	gi := 0
	for key, b := range bad {
		for range 5 {
			bag := ds.Bags[gi]
			raw, _ := json.Marshal(wire.NewBagMessage(&bag, "mscv2", ds.Dim, ds.Classes, false))
			msgs = append(msgs, kafka.Message{Topic: e.topics.Annotate, Key: []byte(bag.ID), Value: raw})
			goodIDs = append(goodIDs, bag.ID)
			gi++
		}
		msgs = append(msgs, kafka.Message{Topic: e.topics.Annotate, Key: []byte(key), Value: []byte(b.raw)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	out.waitIDs(t, len(goodIDs), 60*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, _, d := out.counts(); d >= len(bad) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	checkDeadReasons(t, out, bad, e.topics.Annotate)
	out.mu.Lock()
	defer out.mu.Unlock()
	for _, id := range goodIDs {
		if len(out.anns[id]) == 0 {
			t.Errorf("good bag %s around the bad ones not annotated", id)
		}
	}
}

// TestRedisOutage takes Redis away (through a proxy the test controls) from
// a running annotator and a retrainer: the annotator keeps serving its
// model, the retrainer retries and completes once Redis is back.
func TestRedisOutage(t *testing.T) {
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	v1 := e.promote(blob)
	proxy, err := streamtest.NewProxy(e.redis)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Down()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := e.tail(ctx)
	a := e.startAnnotator("a1", annotatorOpts{redis: proxy.Addr(), listen: true})
	streamtest.WaitFor(t, 20*time.Second, "annotator ready", func() bool { return a.readyVersion() == v1 })

	rdb, err := redisflag.Dial(ctx, redisflag.Options{Addr: proxy.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	reg := featurestore.NewRegistry(rdb, e.prefix+":models")
	r, err := retrain.NewRetrainer(retrain.RetrainerConfig{Brokers: e.brokers, Topic: e.topics.Train, Kinds: kinds(), Kind: "orlr",
		Params: models.Params{"iters": "3", "msteps": "5"}, Store: reg, Every: 100000, MinBags: 10, HoldOut: 0.2, Margin: 1, Warm: true})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.Run(ctx) }()

	proxy.Down()
	pub := e.publisher(0.5)
	if _, err := pub.PublishDataset(ctx, ds, ds.Bags[:200]); err != nil {
		t.Fatal(err)
	}
	out.waitIDs(t, 200, 60*time.Second)
	if v := a.readyVersion(); v != v1 {
		t.Errorf("annotator reports %q during the outage, want %s", v, v1)
	}
	select {
	case <-a.done:
		t.Fatalf("annotator exited during the outage: %v", a.err)
	default:
	}
	streamtest.WaitFor(t, 20*time.Second, "retrainer window", func() bool { return r.Len() > 50 })
	var res retrain.RefitResult
	done := streamtest.StaysBlocked(t, time.Second, "refit with Redis down", func() (err error) {
		res, err = r.Refit(ctx)
		return err
	})
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || !res.Promoted {
			t.Fatalf("refit after the outage: %+v %v", res, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("refit did not finish after Redis came back")
	}
	streamtest.WaitFor(t, 5*time.Second, "annotator picks up the retrained model", func() bool { return a.readyVersion() == res.Version })
}

// TestPromotionAndRollbackReachEveryAnnotator measures how long a promotion
// and a rollback take to reach two annotator processes.
func TestPromotionAndRollbackReachEveryAnnotator(t *testing.T) {
	e := newEnv(t)
	_, blob := mscv2Model(t)
	v1 := e.promote(blob)
	// A long poll: the change must arrive by notification.
	opts := annotatorOpts{listen: true, extra: []string{"--poll", "1m"}}
	as := []*annotator{e.startAnnotator("a1", opts), e.startAnnotator("a2", opts)}
	all := func(v string) func() bool {
		return func() bool {
			for _, a := range as {
				if a.readyVersion() != v {
					return false
				}
			}
			return true
		}
	}
	streamtest.WaitFor(t, 20*time.Second, "annotators ready", all(v1))
	// A distinct blob: the same model under other provenance params.
	var env map[string]any
	if err := json.Unmarshal(blob, &env); err != nil {
		t.Fatal(err)
	}
	env["meta"].(map[string]any)["params"] = map[string]any{"note": "second"}
	blob2, _ := json.Marshal(env)
	v2 := e.promote(blob2)
	d := streamtest.WaitFor(t, time.Second, "promotion reaches every annotator", all(v2))
	t.Logf("promotion %s -> %s reached 2 annotators in %v", v1, v2, d)
	back, err := e.reg.Rollback(context.Background())
	if err != nil || back != v1 {
		t.Fatalf("rollback = %s, %v", back, err)
	}
	d = streamtest.WaitFor(t, time.Second, "rollback reaches every annotator", all(v1))
	t.Logf("rollback to %s reached 2 annotators in %v", v1, d)
}

// TestSIGTERMDrainsAndCommits stops an annotator process with SIGTERM in the
// middle of a stream: it must exit cleanly, and since it committed what it
// output, its successor re-annotates nothing and misses nothing.
func TestSIGTERMDrainsAndCommits(t *testing.T) {
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	e.promote(blob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := e.tail(ctx)
	first := e.startAnnotator("first", annotatorOpts{})
	pub := e.publisher(0.5)
	published := publishPaced(ctx, pub, ds, 40*time.Millisecond)
	out.waitIDs(t, len(ds.Bags)/3, 60*time.Second)
	first.terminate(t, 30*time.Second)
	stoppedAt, _, _ := out.counts()
	e.startAnnotator("second", annotatorOpts{})
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	out.waitIDs(t, len(ds.Bags), 90*time.Second)
	ids, total, dead := out.counts()
	t.Logf("stopped after %d bags; %d bags annotated, %d annotations, %d dead letters", stoppedAt, ids, total, dead)
	if total != ids || dead != 0 {
		t.Errorf("%d duplicate annotations after a graceful stop, %d dead letters; want 0 and 0", total-ids, dead)
	}
}

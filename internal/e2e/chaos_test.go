package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/embedded/broker"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// chaosEnv gates TestChaos; chaosDurationEnv sets how long the faults last
// (a Go duration, default 3m).
const (
	chaosEnv         = "MIMLSTREAM_CHAOS"
	chaosDurationEnv = "MIMLSTREAM_CHAOS_DURATION"
)

// smallInvalid returns a small bag invalid for one of several reasons.
func smallInvalid(ds *mil.Dataset, key string, kind int) ([]byte, wire.Reason) {
	row := mustJSON(ds.Bags[0].Instances[0])
	switch kind % 5 {
	case 0:
		return []byte(`{"schema_version":1,"id":"` + key + `","dim":48,"instances":[` + string(row)), wire.ReasonMalformedJSON
	case 1:
		return []byte(`{"schema_version":1,"id":"` + key + `","dim":48,"instances":[["NaN"` + strings.Repeat(",0.5", 47) + `]]}`), wire.ReasonNonFinite
	case 2:
		return []byte(`{"schema_version":1,"id":"` + key + `","dim":3,"instances":[[1,2,3]]}`), wire.ReasonDimension
	case 3:
		return []byte(`{"schema_version":1,"id":"` + key + `","dim":48,"instances":[]}`), wire.ReasonEmptyBag
	default:
		return []byte(`{"schema_version":1,"id":"` + key + `","dim":48,"instances":[` + string(row) + `],"labels":[0],"classes":["x"]}`), wire.ReasonVocabulary
	}
}

// TestChaos runs the pipeline as processes (two annotators, a retrainer)
// for a few minutes while a producer sends valid bags (half labeled, also
// to the training topic; some under one shared key, some with none),
// invalid bags small and of 226 KB, bags of 1.5 MB (over the services'
// 1 MiB limit), bags and training bags with a finite feature of 1e308, and
// poison training bags, and a chaos
// loop SIGKILLs a random service every 2 to 4 s and restarts it, and
// restarts the broker (down for 3 s, its data kept, see
// broker.Embedded.Restart) every minute. The producer retries what the
// broker refused while down. Then: no valid bag id is missing from the
// annotations, every bad bag is dead-lettered with its reason, no service
// exited by itself, and the registry is consistent (the
// current alias names a version whose blob matches its checksum and
// decodes, every listed version reads back, the annotators serve the
// current one). Gated by MIMLSTREAM_CHAOS=1 (make chaos): it takes minutes.
func TestChaos(t *testing.T) {
	if os.Getenv(chaosEnv) == "" {
		t.Skipf("set %s=1 (make chaos) to run the chaos test", chaosEnv)
	}
	duration := 3 * time.Minute
	if s := os.Getenv(chaosDurationEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s: %v", chaosDurationEnv, err)
		}
		duration = d
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 12))
	t.Logf("chaos for %v, seed %d", duration, seed)

	var b *broker.Embedded
	e := newEnvOn(t, func(topics wire.Topics) []string {
		var err error
		if b, err = broker.Start(broker.Options{Partitions: 4, Topics: topics.All()}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		return b.Addrs()
	})
	ds, blob := mscv2Model(t)
	e.promote(blob)
	e.allowLarge(e.topics.Annotate, 8<<20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := e.tail(ctx)
	dead := e.tailDead(ctx)

	// The services, by role; restarted under new names.
	var mu sync.Mutex
	live := map[string]*annotator{}
	var retrainers []*annotator // every retrainer process, for its refits
	started := 0
	start := func(role string) {
		mu.Lock()
		started++
		name := fmt.Sprintf("%s-%d", role, started)
		mu.Unlock()
		var p *annotator
		if role == "annotator" {
			p = e.startAnnotator(name, annotatorOpts{listen: true})
		} else {
			p = e.spawn("retrainer", name, e.retrainerArgs(150, "", "--window", "3000"))
		}
		mu.Lock()
		if role == "retrainer" {
			retrainers = append(retrainers, p)
		}
		live[name] = p
		mu.Unlock()
	}
	start("annotator")
	start("annotator")
	start("retrainer")

	// The producer.
	var valid []string
	wantDead := map[string]wire.Reason{}   // stage annotate
	wantPoison := map[string]wire.Reason{} // stage retrain
	produced := make(chan struct{})
	stopProducing := make(chan struct{})
	// retried repeats a write the broker refused (down for a restart)
	// until it is taken, for up to a minute: a write retried after a lost
	// reply may land twice, which at-least-once allows.
	var refusedWrites atomic.Int64
	retried := func(what string, write func() error) bool {
		var err error
		for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
			if err = write(); err == nil {
				return true
			}
			refusedWrites.Add(1)
		}
		t.Errorf("%s: %v", what, err)
		return false
	}
	go func() {
		defer close(produced)
		pub := e.publisher(0.5)
		w := e.writer(8 << 20)
		write := func(topic string, keys []string, raws [][]byte) bool {
			msgs := make([]kafka.Message, len(raws))
			for i := range raws {
				msgs[i] = kafka.Message{Topic: topic, Key: []byte(keys[i]), Value: raws[i]}
			}
			return retried("write to "+topic, func() error { return w.WriteMessages(ctx, msgs...) })
		}
		for tick := 0; ; tick++ {
			select {
			case <-stopProducing:
				return
			case <-time.After(200 * time.Millisecond):
			}
			bags := make([]mil.Bag, 10)
			for i := range bags {
				bags[i] = ds.Bags[(tick*10+i)%len(ds.Bags)]
				bags[i].ID = fmt.Sprintf("%s~c%d", bags[i].ID, tick)
				valid = append(valid, bags[i].ID)
			}
			if !retried("publish", func() error { _, err := pub.PublishDataset(ctx, ds, bags); return err }) {
				return
			}
			if tick%10 == 7 {
				// Valid bags under one shared key and with none: each is
				// annotated, under its own id.
				var keys []string
				var raws [][]byte
				for j, key := range []string{"shared", "shared", ""} {
					b := ds.Bags[(tick*10+j)%len(ds.Bags)]
					b.ID = fmt.Sprintf("%s~k%d-%d", b.ID, tick, j)
					valid = append(valid, b.ID)
					keys, raws = append(keys, key), append(raws, mustJSON(wire.NewBagMessage(&b, "mscv2", ds.Dim, ds.Classes, false)))
				}
				if !write(e.topics.Annotate, keys, raws) {
					return
				}
			}
			if tick%25 == 24 {
				// A finite feature beyond the models' bound, to be
				// annotated and to be trained on (it stopped every
				// warm-started orlr refit).
				huge := strings.Repeat(",0.5", ds.Dim-1)
				ak, tk := fmt.Sprintf("hugefeat-%d", tick), fmt.Sprintf("hugetrain-%d", tick)
				if !write(e.topics.Annotate, []string{ak},
					[][]byte{[]byte(`{"schema_version":1,"id":"` + ak + `","dim":` + fmt.Sprint(ds.Dim) + `,"instances":[[1e308` + huge + `]]}`)}) ||
					!write(e.topics.Train, []string{tk},
						[][]byte{[]byte(`{"schema_version":1,"id":"` + tk + `","dim":` + fmt.Sprint(ds.Dim) + `,"instances":[[1e308` + huge + `]],"labels":[0],"classes":` + string(mustJSON(ds.Classes)) + `}`)}) {
					return
				}
				wantDead[ak], wantPoison[tk] = wire.ReasonNonFinite, wire.ReasonNonFinite
			}
			var key string
			var raw []byte
			var reason wire.Reason
			topic := e.topics.Annotate
			switch {
			case tick%30 == 29:
				key = fmt.Sprintf("huge-%d", tick)
				raw, reason = mustJSON(bigBag(ds, key, 1_500_000)), wire.ReasonOversize
			case tick%15 == 14:
				key = fmt.Sprintf("bigbad-%d", tick)
				raw, reason = bigInvalid(ds, key, tick/15)
			case tick%20 == 19:
				key = fmt.Sprintf("poison-%d", tick)
				topic = e.topics.Train
				m := wire.NewBagMessage(&mil.Bag{ID: key, Instances: ds.Bags[0].Instances, Labels: []int{}}, "mscv2", ds.Dim, ds.Classes, false)
				for c := range ds.Classes {
					m.Labels = append(m.Labels, c)
				}
				raw, reason = mustJSON(m), wire.ReasonLabelSetTooLarge
			case tick%5 == 4:
				key = fmt.Sprintf("bad-%d", tick)
				raw, reason = smallInvalid(ds, key, tick/5)
			default:
				continue
			}
			if !write(topic, []string{key}, [][]byte{raw}) {
				return
			}
			if topic == e.topics.Train {
				wantPoison[key] = reason
			} else {
				wantDead[key] = reason
			}
		}
	}()

	// The chaos: SIGKILL a random service every 2 to 4 s and restart it.
	// An annotator is killed only once it consumes (readyz answers): a
	// member killed while its JoinGroup is in flight stays in kfake's
	// group (see TestKillAnnotatorMidStream).
	kills := map[string]int{}
	restarts := 0
	var restartedAt []time.Time // when the broker served again
	lastRestart := time.Now()
	var selfExits []string
	deadline := time.Now().Add(duration)
	for time.Now().Before(deadline) {
		time.Sleep(2*time.Second + time.Duration(rng.Int64N(int64(2*time.Second))))
		if time.Since(lastRestart) >= time.Minute {
			if err := b.Restart(3 * time.Second); err != nil {
				t.Fatal(err)
			}
			restarts++
			lastRestart = time.Now()
			restartedAt = append(restartedAt, lastRestart)
			t.Logf("broker restarted (%d), down for 3 s", restarts)
			continue
		}
		mu.Lock()
		for name, p := range live {
			select {
			case <-p.done:
				// A service must ride out kills of the others and broker
				// restarts; one that exited is a finding, restarted so
				// the run goes on.
				selfExits = append(selfExits, fmt.Sprintf("%s (%v)", name, p.err))
				delete(live, name)
				mu.Unlock()
				start(strings.SplitN(name, "-", 2)[0])
				mu.Lock()
			default:
			}
		}
		var names []string
		for name, p := range live {
			if strings.HasPrefix(name, "retrainer") || p.readyVersion() != "" {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			mu.Unlock()
			continue
		}
		name := names[rng.IntN(len(names))]
		victim := live[name]
		delete(live, name)
		mu.Unlock()
		role := strings.SplitN(name, "-", 2)[0]
		if err := victim.cmd.Process.Signal(syscall.SIGKILL); errors.Is(err, os.ErrProcessDone) {
			<-victim.done
			selfExits = append(selfExits, fmt.Sprintf("%s (%v)", name, victim.err))
			start(role)
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		<-victim.done
		kills[role]++
		start(role)
	}
	close(stopProducing)
	<-produced
	t.Logf("faults over: %d annotator and %d retrainer SIGKILLs, %d broker restarts (%d writes refused and retried); %d valid bags, %d bad ones, %d poison training bags sent",
		kills["annotator"], kills["retrainer"], restarts, refusedWrites.Load(), len(valid), len(wantDead), len(wantPoison))
	if restarts == 0 {
		t.Errorf("no broker restart in %v (one a minute)", duration)
	}

	// A fresh member makes the group rebalance once more, as a real
	// broker would after the session timeout of a killed one.
	start("annotator")
	out.waitIDs(t, len(valid), 3*time.Minute)
	ids, total, _ := out.counts()
	out.mu.Lock()
	missing := 0
	for _, id := range valid {
		if len(out.anns[id]) == 0 {
			missing++
		}
	}
	out.mu.Unlock()
	var keys []string
	for k := range wantDead {
		keys = append(keys, k)
	}
	for k := range wantPoison {
		keys = append(keys, k)
	}
	got := dead.waitKeys(t, keys, 2*time.Minute)
	for k, r := range wantDead {
		if d := got[k]; d.Reason != r || d.Stage != wire.StageAnnotate {
			t.Errorf("%s: dead letter %s at %s, want %s at annotate", k, d.Reason, d.Stage, r)
		}
	}
	for k, r := range wantPoison {
		if d := got[k]; d.Reason != r || d.Stage != wire.StageRetrain {
			t.Errorf("%s: dead letter %s at %s, want %s at retrain", k, d.Reason, d.Stage, r)
		}
	}
	dead.mu.Lock()
	for _, m := range dead.msgs {
		if len(m.Value) > limit {
			t.Errorf("a dead letter of %d bytes", len(m.Value))
		}
	}
	nDead := len(dead.msgs)
	dead.mu.Unlock()
	byReason := map[string]int{}
	for k := range got {
		byReason[string(got[k].Stage)+"/"+string(got[k].Reason)]++
	}
	var reasons []string
	for _, r := range slices.Sorted(maps.Keys(byReason)) {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, byReason[r]))
	}
	t.Logf("%d of %d valid bag ids annotated (%d missing), %d annotations (%d duplicates from redelivery), %d dead-letter records for %d bad bags (by stage/reason: %s)",
		ids, len(valid), missing, total, total-ids, nDead, len(keys), strings.Join(reasons, ", "))
	if missing > 0 {
		t.Errorf("%d valid bag ids never annotated", missing)
	}
	// The pipeline resumed after each restart: the first annotation whose
	// record timestamp (the annotator's, at writing) follows the moment the
	// broker served again.
	out.mu.Lock()
	var resumed []string
	for _, at := range restartedAt {
		first := time.Time{}
		for _, ts := range out.times {
			if ts.After(at) && (first.IsZero() || ts.Before(first)) {
				first = ts
			}
		}
		if first.IsZero() {
			t.Errorf("no annotation written after the broker restart at %v", at)
			continue
		}
		resumed = append(resumed, fmt.Sprintf("%.1f s", first.Sub(at).Seconds()))
	}
	out.mu.Unlock()
	t.Logf("annotations written again after each broker restart (from when it served again): %s", strings.Join(resumed, ", "))
	mu.Lock()
	for name, p := range live {
		select {
		case <-p.done:
			selfExits = append(selfExits, fmt.Sprintf("%s (%v)", name, p.err))
		default:
		}
	}
	mu.Unlock()
	if len(selfExits) > 0 {
		t.Errorf("services exited by themselves: %v", selfExits)
	}

	// The registry.
	rctx := context.Background()
	cur, meta, err := e.reg.Current(rctx)
	if err != nil {
		t.Fatalf("current model: %v", err)
	}
	if _, err := kinds().Decode(cur); err != nil {
		t.Errorf("current %s does not decode: %v", meta.Version, err)
	}
	vs, err := e.reg.List(rctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if _, _, err := e.reg.Get(rctx, v.Version); err != nil {
			t.Errorf("version %s: %v", v.Version, err)
		}
	}
	mu.Lock()
	var as []*annotator
	for name, p := range live {
		if strings.HasPrefix(name, "annotator") {
			as = append(as, p)
		}
	}
	refitsTotal, failed := 0, 0
	for _, r := range retrainers {
		refitsTotal += refits(r)
		failed += strings.Count(r.logText(), "refit failed")
	}
	mu.Unlock()
	if failed > 0 {
		t.Errorf("%d refits failed", failed)
	}
	streamtest.WaitFor(t, 20*time.Second, "annotators serve the current version", func() bool {
		for _, a := range as {
			if a.readyVersion() != meta.Version {
				return false
			}
		}
		return true
	})
	var withOffsets int
	for _, v := range vs {
		if len(v.TrainOffsets) > 0 {
			withOffsets++
		}
	}
	t.Logf("registry: current %s, %d versions kept (%d with training offsets), all read back with matching checksums; %d refits by %d retrainer processes",
		meta.Version, len(vs), withOffsets, refitsTotal, len(retrainers))
}

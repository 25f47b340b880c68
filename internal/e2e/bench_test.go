package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/annotate"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/kafkatest"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// BenchmarkPipeline measures, in one run on loopback, the end-to-end
// throughput of the pipeline (publish -> Kafka -> annotator -> Kafka ->
// consumer) on MSCV2 with ORed-LR next to what bounds it: the raw kafka-go
// produce rate of the same bag messages on the same broker (large batches,
// several in flight: the client's ceiling here) and the annotate step
// alone with the same workers; then the p50/p99 latency from produce to
// the annotation's arrival at a paced half and a tenth of the measured
// throughput. Each sub-benchmark is one output compression (the publisher,
// the annotator and the raw produce alike); MIMLSTREAM_BENCH_CODECS picks
// them (default "none,lz4"). Within each, one sub-benchmark per wire
// format of the bags and annotations (the publisher, the annotator and the
// raw produce alike): wire=json (the default format) and wire=protobuf
// (--wire-format protobuf); MIMLSTREAM_BENCH_WIRES picks them (default
// "json,protobuf"). Each iteration is all 591 bags (new ids); the
// saturating iterations are published as one stream, timed from its first
// publish to its last annotation (MIMLSTREAM_BENCH_BURSTS=1: one pass at a
// time, each drained, which leaves the cores idle at every pass's end).
// Run it with `make bench`.
//
// The top level is the broker: broker=embedded (the in-process kfake
// broker, a fresh one per sub-benchmark) and, for each version that
// MIMLSTREAM_BENCH_KAFKA names (comma-separated, e.g. 4.4.0; `make bench`
// sets it when java and mvn are installed), broker=kafka-VERSION: one
// Apache Kafka node started by kafkatest on loopback, with its default
// flush settings (no fsync per message: log.flush.interval.messages and
// log.flush.interval.ms unset, durability from acks and the page cache).
// MIMLSTREAM_BENCH_BROKERS=host:port[,host:port] replaces both with a
// cluster of your own (broker=external, plaintext). On a cluster that is
// not embedded each sub-benchmark creates topics of its own (4 partitions,
// the cluster's replication) and deletes them at the end, and the CPU
// metrics are this process's alone, without the broker's.
func BenchmarkPipeline(b *testing.B) {
	codecs, wires := "none,lz4", "json,protobuf"
	if v := os.Getenv("MIMLSTREAM_BENCH_CODECS"); v != "" {
		codecs = v
	}
	if v := os.Getenv("MIMLSTREAM_BENCH_WIRES"); v != "" {
		wires = v
	}
	for _, target := range benchTargets() {
		b.Run("broker="+target.name, func(b *testing.B) {
			brokers := target.start(b)
			for name := range strings.SplitSeq(codecs, ",") {
				codec, err := kafkaio.ParseCompression(name)
				if err != nil {
					b.Fatal(err)
				}
				b.Run("codec="+name, func(b *testing.B) {
					for w := range strings.SplitSeq(wires, ",") {
						format, err := wire.ParseFormat(w)
						if err != nil {
							b.Fatal(err)
						}
						b.Run("wire="+w, func(b *testing.B) { benchPipeline(b, brokers, codec, format) })
					}
				})
			}
		})
	}
}

// benchTarget is a broker the pipeline is measured on; start returns its
// addresses (nil: an embedded broker per sub-benchmark).
type benchTarget struct {
	name  string
	start func(b *testing.B) []string
}

func benchTargets() []benchTarget {
	if v := os.Getenv("MIMLSTREAM_BENCH_BROKERS"); v != "" {
		return []benchTarget{{"external", func(*testing.B) []string { return strings.Split(v, ",") }}}
	}
	targets := []benchTarget{{"embedded", func(*testing.B) []string { return nil }}}
	for v := range strings.SplitSeq(os.Getenv("MIMLSTREAM_BENCH_KAFKA"), ",") {
		if v = strings.TrimSpace(v); v != "" {
			targets = append(targets, benchTarget{"kafka-" + v, func(b *testing.B) []string {
				return kafkatest.Start(b, kafkatest.Options{Version: v, HeapMB: 1024}).Addrs()
			}})
		}
	}
	return targets
}

func benchPipeline(b *testing.B, external []string, codec kafka.Compression, format wire.Format) {
	ds, blob := mscv2ModelB(b)
	kinds := kinds()
	m, err := kinds.Decode(blob)
	if err != nil {
		b.Fatal(err)
	}
	workers := runtime.GOMAXPROCS(0)
	// The producers' linger (--linger of ingest and the annotator): their
	// defaults, or both MIMLSTREAM_BENCH_LINGER.
	linger, annLinger := kafkaio.DefaultLinger, annotate.DefaultLinger
	if v := os.Getenv("MIMLSTREAM_BENCH_LINGER"); v != "" {
		if linger, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
		annLinger = linger
	}

	// The annotate step alone: the annotator's work without Kafka, JSON or
	// Redis, on the same bags in the same modes, with the same workers.
	bags := benchBags(ds)
	annotateStart := time.Now()
	for range b.N {
		annotateAll(b, m, bags, workers)
	}
	annotateRate := float64(b.N*len(bags)) / time.Since(annotateStart).Seconds()

	// The pipeline.
	prefix := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	brokers, topics, rawTopic := benchBroker(b, external, prefix)
	rdb, err := redisflag.Dial(context.Background(), redisflag.Options{Addr: redistest.Addr()})
	if err != nil {
		_, rdb, _ = streamtest.StartRedis(b)
	} else {
		defer rdb.Close()
	}

	// The client's ceiling: the same messages, raw.
	rawRate, rawCPU := rawProduce(b, brokers, rawTopic, ds, codec, format)

	reg := featurestore.NewRegistry(rdb, prefix+":models")
	defer streamtest.DeleteKeys(context.Background(), rdb, "{"+prefix+"*")
	meta, err := reg.Put(context.Background(), blob, featurestore.VersionMeta{})
	if err != nil {
		b.Fatal(err)
	}
	if err := reg.Promote(context.Background(), meta.Version); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := annotate.NewAnnotator(annotate.AnnotatorConfig{Brokers: brokers, GroupID: prefix + "-annotator", Topics: topics, Name: "bench",
		Kinds: kinds, Store: reg, Cache: featurecache.New(rdb, prefix+":features", time.Hour, 100000), Workers: workers,
		BatchSize: 128, BatchWait: 5 * time.Millisecond, Compression: codec, Format: format, Linger: annLinger})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = a.Run(ctx) }()
	defer wg.Wait()
	defer cancel()

	arrivals := make(chan arrival, 4096)
	go func() {
		_ = kafkaio.Tail(ctx, brokers, kafkasec.Conn{}, topics.Annotations, func(m kafka.Message) error {
			now := time.Now()
			// What the consumer needs of an annotation (its id and
			// ingestion time), read without decoding the rest, in either
			// encoding: a consumer that needs the scores pays for them.
			var ann struct {
				BagID      string
				IngestedAt *time.Time
			}
			if ct := kafkaio.ContentType(m.Headers); wire.FormatOf(ct) == wire.FormatProtobuf {
				id, at, err := annotationHead(m.Value)
				if err != nil {
					return err
				}
				ann.BagID, ann.IngestedAt = id, at
			} else if id, at, err := annotationHeadJSON(m.Value); err != nil {
				return err
			} else {
				ann.BagID, ann.IngestedAt = id, at
			}
			var lat time.Duration
			if ann.IngestedAt != nil {
				lat = now.Sub(*ann.IngestedAt)
			}
			arrivals <- arrival{id: ann.BagID, latency: lat}
			return nil
		})
	}()
	pub, err := ingest.NewPublisher(ingest.PublisherConfig{Brokers: brokers, Topics: topics, LabelFraction: 0.5, Seed: 1, Compression: codec, Format: format, Linger: linger})
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	// Warm up: the consumer group forms and the first batch is served.
	runPass(b, ctx, pub, ds, "warm", 1, arrivals, 0)

	// MIMLSTREAM_BENCH_CPUPROFILE=FILE writes a CPU profile of the
	// saturating stream alone (not of the model's training, the raw
	// produce or the paced passes): what bounds the end-to-end rate.
	stopProfile := startProfile(b, os.Getenv("MIMLSTREAM_BENCH_CPUPROFILE"))
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	if os.Getenv("MIMLSTREAM_BENCH_BURSTS") != "" {
		// One pass of the dataset at a time, each waiting for its last
		// annotation, so the pipeline fills and drains b.N times: kept
		// to compare with the stream, which the raw produce also is.
		for i := range b.N {
			runPass(b, ctx, pub, ds, fmt.Sprintf("t%d", i), 1, arrivals, 0)
		}
	} else {
		// One stream of b.N copies of the dataset, as the raw produce
		// writes one stream: a pipeline's sustained rate, filled and
		// drained once. (Passes of 591 bags, about 15 ms each here,
		// left the cores idle for a few ms at every pass's end, a
		// sixth to a quarter of the time.)
		runPass(b, ctx, pub, ds, "t", b.N, arrivals, 0)
	}
	stopProfile()
	e2eRate := float64(b.N*len(ds.Bags)) / time.Since(start).Seconds()
	// The CPU the whole pipeline (broker, publisher, annotator, consumer:
	// all in this process) spends per bag: unlike the rates, it does not
	// depend on what else the machine runs.
	cpuPerBag := float64((cpuTime() - cpu0).Microseconds()) / float64(b.N*len(ds.Bags))
	b.StopTimer()

	// Latency at half and at a tenth of the measured throughput, where
	// queueing is not the whole story.
	for _, frac := range []float64{0.5, 0.1} {
		var lats []time.Duration
		for i := range b.N {
			lats = append(lats, runPass(b, ctx, pub, ds, fmt.Sprintf("l%v-%d", frac, i), 1, arrivals, e2eRate*frac)...)
		}
		slices.Sort(lats)
		q := func(p float64) float64 {
			return float64(lats[min(len(lats)-1, int(p*float64(len(lats))))].Microseconds()) / 1000
		}
		at := fmt.Sprintf("@%d%%", int(frac*100))
		b.ReportMetric(q(0.5), "p50_ms"+at)
		b.ReportMetric(q(0.99), "p99_ms"+at)
	}
	b.ReportMetric(e2eRate, "e2e_bags/s")
	b.ReportMetric(rawRate, "raw_produce_msgs/s")
	b.ReportMetric(annotateRate, "annotate_bags/s")
	b.ReportMetric(e2eRate/rawRate, "e2e/raw_produce")
	b.ReportMetric(e2eRate/annotateRate, "e2e/annotate")
	b.ReportMetric(cpuPerBag, "e2e_cpu_us/bag")
	// The same ratio in CPU: what the raw produce costs a message against
	// what the pipeline costs a bag, both all in this process. Where the
	// two rates are measured seconds apart on a machine other work loads
	// unevenly, this one holds still; on an idle machine, where both are
	// bound by these two cores, the rates' ratio comes near it.
	b.ReportMetric(rawCPU, "raw_produce_cpu_us/msg")
	b.ReportMetric(rawCPU/cpuPerBag, "e2e/raw_produce_cpu")
	b.ReportMetric(0, "ns/op")
}

// benchBroker returns the brokers, the pipeline's topics and the raw
// produce's topic of one sub-benchmark: on a new embedded broker (brokers
// nil) the default names, on the cluster at brokers topics
// named after prefix, created now and deleted when b ends, so that runs
// neither meet each other's records nor leave theirs behind.
func benchBroker(b *testing.B, brokers []string, prefix string) ([]string, wire.Topics, string) {
	b.Helper()
	if brokers == nil {
		topics := wire.DefaultTopics()
		const raw = "bench-raw"
		return streamtest.StartBroker(b, 4, append(topics.All(), raw)...), topics, raw
	}
	topics := wire.Topics{Annotate: prefix + "-bags", Train: prefix + "-bags-train", Annotations: prefix + "-annotations", DeadLetter: prefix + "-dead-letters"}
	raw := prefix + "-raw"
	names := append(topics.All(), raw)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kafkaio.EnsureTopics(ctx, brokers, kafkasec.Conn{}, 4, names...); err != nil {
		b.Fatalf("topics on %v: %v", brokers, err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
		resp, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: names})
		if err == nil {
			for _, terr := range resp.Errors {
				err = errors.Join(err, terr)
			}
		}
		if err != nil {
			b.Logf("deleting the benchmark's topics %v: %v", names, err)
		}
	})
	return brokers, topics, raw
}

// rawProduce returns the rate at which a bare kafka-go writer produces the
// bag messages of ds (as ingest encodes them in format, with their keys) to topic:
// acks from all in-sync replicas, 500-message batches, 8 writes in flight.
// It is the ceiling of any pipeline through this client and broker. It
// returns the CPU time the process spent per message too (in µs).
func rawProduce(b *testing.B, brokers []string, topic string, ds *mil.Dataset, codec kafka.Compression, format wire.Format) (rate, cpuPerMsg float64) {
	b.Helper()
	msgs := make([]kafka.Message, len(ds.Bags))
	for i := range ds.Bags {
		bag := ds.Bags[i]
		bm := wire.NewBagMessage(&bag, ds.Name, ds.Dim, ds.Classes, false)
		raw, err := bm.Marshal(format)
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = kafka.Message{Topic: topic, Key: []byte(bag.ID), Value: raw}
	}
	// A transport of its own, as the services have: kafka-go's shared
	// default caches the cluster's metadata for seconds, from before the
	// topics of MIMLSTREAM_BENCH_BROKERS were created.
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Transport: kafkasec.Conn{}.Transport(), RequiredAcks: kafka.RequireAll, Balancer: &kafka.Hash{},
		BatchSize: 500, BatchBytes: 64 << 20, BatchTimeout: 5 * time.Millisecond, Compression: codec}
	defer w.Close()
	const batch, inFlight = 500, 8
	// At least 200,000 messages (a quarter second or more here): shorter
	// runs of this fast path moved by a fifth from run to run.
	total := max(200000, b.N*len(msgs)*4)
	write := func(n int) {
		var wg sync.WaitGroup
		next := make(chan int)
		for range inFlight {
			wg.Go(func() {
				out := make([]kafka.Message, 0, batch)
				for start := range next {
					out = out[:0]
					for i := start; i < min(start+batch, n); i++ {
						out = append(out, msgs[i%len(msgs)])
					}
					if err := w.WriteMessages(context.Background(), out...); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for start := 0; start < n; start += batch {
			next <- start
		}
		close(next)
		wg.Wait()
	}
	write(2 * batch * inFlight) // warm: connections and metadata
	start, cpu0 := time.Now(), cpuTime()
	write(total)
	rate = float64(total) / time.Since(start).Seconds()
	return rate, float64((cpuTime() - cpu0).Microseconds()) / float64(total)
}

// startProfile starts a CPU profile to path (none if path is empty) and
// returns what stops it.
func startProfile(b *testing.B, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

// cpuTime returns the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type arrival struct {
	id      string
	latency time.Duration
}

// runPass publishes copies of every bag of ds under ids tagged with pass
// (at rate bags/s, or as fast as acknowledged when rate is 0) and waits for
// all of their annotations; it returns their latencies.
func runPass(b *testing.B, ctx context.Context, pub *ingest.Publisher, ds *mil.Dataset, pass string, copies int, arrivals <-chan arrival, rate float64) []time.Duration {
	bags := make([]mil.Bag, 0, copies*len(ds.Bags))
	want := make(map[string]bool, cap(bags))
	for c := range copies {
		tag := pass
		if copies > 1 {
			tag = fmt.Sprintf("%s.%d", pass, c)
		}
		for _, bag := range ds.Bags {
			bag.ID = tag + "/" + bag.ID
			bags = append(bags, bag)
			want[bag.ID] = true
		}
	}
	errc := make(chan error, 1)
	go func() {
		// Saturating passes publish from several clients at once, as a
		// fleet of ingest instances would. Paced passes publish 5 ms of
		// bags at a time, each chunk on schedule (the chunks' publishes
		// overlap), so the schedule, not the publisher, sets the rate.
		var wg sync.WaitGroup
		var once sync.Once
		if rate > 0 {
			chunk := max(1, int(rate/200))
			start := time.Now()
			for i := 0; i < len(bags); i += chunk {
				j := min(i+chunk, len(bags))
				time.Sleep(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
				wg.Go(func() {
					if _, err := pub.PublishDataset(ctx, ds, bags[i:j]); err != nil {
						once.Do(func() { errc <- err })
					}
				})
			}
			wg.Wait()
			once.Do(func() { errc <- nil })
			return
		}
		const chunk = 64
		const clients = 4
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := c * chunk; i < len(bags); i += clients * chunk {
					j := min(i+chunk, len(bags))
					if _, err := pub.PublishDataset(ctx, ds, bags[i:j]); err != nil {
						once.Do(func() { errc <- err })
						return
					}
				}
			}()
		}
		wg.Wait()
		once.Do(func() { errc <- nil })
	}()
	var lats []time.Duration
	timeout := time.After(5 * time.Minute)
	for len(want) > 0 {
		select {
		case a := <-arrivals:
			if want[a.id] {
				delete(want, a.id)
				lats = append(lats, a.latency)
			}
		case err := <-errc:
			if err != nil {
				b.Fatal(err)
			}
			errc = nil
		case <-timeout:
			b.Fatalf("pass %s: %d bags not annotated", pass, len(want))
		}
	}
	return lats
}

// benchBags returns the bags as the annotator sees them: with labels (for
// transductive annotation) on the same half that ingest keeps labeled.
func benchBags(ds *mil.Dataset) []mil.Bag {
	p, _ := ingest.NewPublisher(ingest.PublisherConfig{Brokers: []string{"unused:0"}, Topics: wire.DefaultTopics(), LabelFraction: 0.5, Seed: 1})
	defer p.Close()
	out := make([]mil.Bag, len(ds.Bags))
	for i, b := range ds.Bags {
		if !p.KeepLabels(b.ID) {
			b.Labels = nil
		}
		b.InstanceLabels = nil
		out[i] = b
	}
	return out
}

func annotateAll(b *testing.B, m models.Model, bags []mil.Bag, workers int) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				mode := models.Inductive
				if bags[i].Labeled() {
					mode = models.Transductive
				}
				if _, err := m.Annotate(context.Background(), &bags[i], mode); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := range bags {
		work <- i
	}
	close(work)
	wg.Wait()
}

// annotationHeadJSON reads what the benchmark's consumer needs of a JSON
// annotation, bag_id and ingested_at, without decoding the scores: the
// annotator writes bag_id second and ingested_at after the scores
// (wire.AnnotationMessage.MarshalJSON), and a string value never holds
// an unescaped quote, so `,"ingested_at":"` can only be that member.
// Anything else is decoded whole. TestAnnotationHeadJSON holds it to
// encoding/json.
func annotationHeadJSON(raw []byte) (id string, ingested *time.Time, err error) {
	whole := func() (string, *time.Time, error) {
		var ann struct {
			BagID      string     `json:"bag_id"`
			IngestedAt *time.Time `json:"ingested_at"`
		}
		err := json.Unmarshal(raw, &ann)
		return ann.BagID, ann.IngestedAt, err
	}
	const idKey, atKey = `,"bag_id":"`, `,"ingested_at":"`
	i := bytes.Index(raw, []byte(idKey))
	if i < 0 || !bytes.HasPrefix(raw, []byte(`{"schema_version":`)) || bytes.IndexByte(raw[len(`{"schema_version":`):i], '"') >= 0 {
		return whole()
	}
	s := raw[i+len(idKey)-1:]
	end := 1
	for end < len(s) && s[end] != '"' {
		if s[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(s) {
		return whole()
	}
	if bytes.IndexByte(s[:end], '\\') < 0 {
		id = string(s[1:end])
	} else if err := json.Unmarshal(s[:end+1], &id); err != nil {
		return "", nil, err
	}
	if j := bytes.Index(raw, []byte(atKey)); j >= 0 {
		v := raw[j+len(atKey):]
		k := bytes.IndexByte(v, '"')
		if k < 0 {
			return whole()
		}
		t, err := time.Parse(time.RFC3339Nano, string(v[:k]))
		if err != nil {
			return "", nil, err
		}
		ingested = &t
	}
	return id, ingested, nil
}

// annotationHead reads what the benchmark's consumer needs of a binary
// annotation (schemas/mimlstream.proto: bag_id = 2, ingested_at = 14),
// skipping the rest, as the JSON consumer unmarshals two fields only.
// TestAnnotationHead holds it to wire.DecodeAnnotation.
func annotationHead(raw []byte) (id string, ingested *time.Time, err error) {
	for b := raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", nil, protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != 2 && num != 14) {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return "", nil, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return "", nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num == 2 {
			id = string(v)
			continue
		}
		var sec, nsec int64
		for len(v) > 0 {
			f, t, k := protowire.ConsumeTag(v)
			if k < 0 || t != protowire.VarintType {
				return "", nil, fmt.Errorf("ingested_at: field %d type %d", f, t)
			}
			x, m := protowire.ConsumeVarint(v[k:])
			if m < 0 {
				return "", nil, protowire.ParseError(m)
			}
			if f == 1 {
				sec = int64(x)
			} else {
				nsec = int64(x)
			}
			v = v[k+m:]
		}
		t := time.Unix(sec, nsec).UTC()
		ingested = &t
	}
	return id, ingested, nil
}

// TestAnnotationHead: the benchmark consumer's partial read of a binary
// annotation gives the id and ingestion time the full decoder gives, with
// and without an ingestion time. Catches a benchmark measuring latency from
// a misread time (or none).
func TestAnnotationHead(t *testing.T) {
	now := time.Date(2026, 11, 25, 19, 0, 1, 234567891, time.UTC)
	for _, ingested := range []*time.Time{nil, &now} {
		a := wire.AnnotationMessage{SchemaVersion: 1, BagID: "MSCV2-7", Model: "orlr", ModelVersion: "v1", Mode: "inductive", Classes: []string{"a", "b"},
			InstanceScores: [][]float64{{0.25, 0.75}}, BagLabels: []int{1}, BagScores: []float64{0.2, 0.8}, LatencyMS: 0.5,
			IngestedAt: ingested, AnnotatedAt: now.Add(time.Second), Annotator: "x"}
		raw, err := a.MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		full, err := wire.DecodeAnnotation(wire.ContentTypeProtobuf, raw)
		if err != nil {
			t.Fatal(err)
		}
		id, at, err := annotationHead(raw)
		if err != nil || id != full.BagID || (at == nil) != (full.IngestedAt == nil) || (at != nil && !at.Equal(*full.IngestedAt)) {
			t.Errorf("head %q %v %v; full %q %v", id, at, err, full.BagID, full.IngestedAt)
		}
	}
}

// TestAnnotationHeadJSON: the benchmark consumer's partial read of a JSON
// annotation gives what encoding/json gives, for ids that need escaping or
// hold the text of the ingestion time's key, with and without an ingestion
// time. Catches a consumer that misreads an id (so a bag would never count
// as arrived) or a time (so the latency is wrong).
func TestAnnotationHeadJSON(t *testing.T) {
	now := time.Date(2026, 11, 25, 19, 0, 1, 234567891, time.FixedZone("x", 3600))
	for _, id := range []string{"MSCV2-7", `a"b\\c`, `<&>` + "\u2028\t", `x,"ingested_at":"2001-01-01T00:00:00Z"`, "é"} {
		for _, ingested := range []*time.Time{nil, &now} {
			a := wire.AnnotationMessage{SchemaVersion: 1, BagID: id, Source: `,"ingested_at":"1999"`, Model: "orlr", ModelVersion: "v1", Mode: "inductive",
				Classes: []string{"a", "b"}, InstanceScores: [][]float64{{0.25, 0.75}}, BagLabels: []int{1}, BagScores: []float64{0.2, 0.8},
				LatencyMS: 0.5, IngestedAt: ingested, AnnotatedAt: now.Add(time.Second), Annotator: "x"}
			raw, err := a.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var full struct {
				BagID      string     `json:"bag_id"`
				IngestedAt *time.Time `json:"ingested_at"`
			}
			if err := json.Unmarshal(raw, &full); err != nil {
				t.Fatal(err)
			}
			gotID, at, err := annotationHeadJSON(raw)
			if err != nil || gotID != full.BagID || (at == nil) != (full.IngestedAt == nil) || (at != nil && !at.Equal(*full.IngestedAt)) {
				t.Errorf("%s: head %q %v %v; encoding/json %q %v", raw, gotID, at, err, full.BagID, full.IngestedAt)
			}
		}
	}
}

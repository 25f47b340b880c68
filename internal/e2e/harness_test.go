package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
	"github.com/mimlstream/mimlstream/internal/models/orlr"
	"github.com/mimlstream/mimlstream/internal/stream/annotate"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/retrain"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// roleEnv makes the test binary act as a service: the annotators of these
// tests are subprocesses running exactly the annotator command's code, so
// SIGKILL and restarts are real.
const roleEnv = "MIMLSTREAM_E2E_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "annotator" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := annotate.Command(ctx, service.Env{Stdout: os.Stdout, Stderr: os.Stderr}, kinds(), os.Args[1:])
		stop()
		os.Exit(cli.ExitCode("annotator", os.Stderr, err))
	}
	if os.Getenv(roleEnv) == "ingest" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := ingest.Command(ctx, service.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:])
		stop()
		os.Exit(cli.ExitCode("ingest", os.Stderr, err))
	}
	if os.Getenv(roleEnv) == "retrainer" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := retrain.ServeCommand(ctx, service.Env{Stdout: os.Stdout, Stderr: os.Stderr}, kinds(), os.Args[1:])
		stop()
		os.Exit(cli.ExitCode("retrainer", os.Stderr, err))
	}
	os.Exit(m.Run())
}

// kinds is the product's catalog.
func kinds() *models.Registry { return catalog.New() }

// env is one test's broker, topics and Redis key space.
type env struct {
	t       *testing.T
	brokers []string
	topics  wire.Topics
	rdb     redis.UniversalClient
	redis   string // the real Redis's address (redistest.Real)
	prefix  string
	reg     *featurestore.Registry
	// sec and secArgs secure the Kafka connections of the test's own
	// clients and of the annotator processes (zero: plaintext).
	sec     kafkasec.Conn
	secArgs []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, func(topics wire.Topics) []string { return streamtest.StartBroker(t, 4, topics.All()...) })
}

// newEnvOn is newEnv on the brokers that start returns (given the
// pipeline's topics, which it may create or leave to the services).
func newEnvOn(t *testing.T, start func(wire.Topics) []string) *env {
	t.Helper()
	redisAddr := redistest.Real(t) // fails under CI=true when no Redis answers
	rdb, err := redisflag.Dial(context.Background(), redisflag.Options{Addr: redisAddr})
	if err != nil {
		t.Fatalf("Redis at %s answered PING but Connect failed: %v", redisAddr, err)
	}
	topics := wire.DefaultTopics()
	brokers := start(topics)
	prefix := fmt.Sprintf("e2e-%s-%d", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() {
		// Keys carry the prefix inside a hash tag: {prefix:models}:...
		streamtest.DeleteKeys(context.Background(), rdb, "{"+prefix+"*")
		rdb.Close()
	})
	return &env{t: t, brokers: brokers, topics: topics, rdb: rdb, redis: redisAddr, prefix: prefix,
		reg: featurestore.NewRegistry(rdb, prefix+":models")}
}

// annotator is a subprocess running the annotator.
type annotator struct {
	name   string
	cmd    *exec.Cmd
	log    *bytes.Buffer
	health string // address of /readyz, when listening
	// done is closed when the process has exited; err is then its status.
	done chan struct{}
	err  error
}

type annotatorOpts struct {
	redis  string // defaults to the real Redis
	listen bool
	extra  []string
}

func (e *env) startAnnotator(name string, o annotatorOpts) *annotator {
	e.t.Helper()
	if o.redis == "" {
		o.redis = e.redis
	}
	listen := ""
	if o.listen {
		listen = freeAddr(e.t)
	}
	args := []string{
		"--brokers", strings.Join(e.brokers, ","), "--redis", o.redis,
		"--registry-prefix", e.prefix + ":models", "--cache-prefix", e.prefix + ":features",
		"--name", name, "--group", "annotators", "--listen", listen,
		"--session-timeout", "2s", "--poll", "250ms", "--create-topics=false", "--log-level", "debug",
	}
	a := e.spawn("annotator", name, append(args, o.extra...))
	a.health = listen
	return a
}

// spawn starts the test binary as a service (role: annotator, retrainer)
// with args and the test's Kafka security flags; the process is killed at
// the end of the test, and its log shown if the test failed.
func (e *env) spawn(role, name string, args []string) *annotator {
	e.t.Helper()
	a := &annotator{name: name, log: &bytes.Buffer{}, done: make(chan struct{})}
	args = append(args, e.secArgs...)
	a.cmd = exec.Command(os.Args[0], args...)
	a.cmd.Env = append(os.Environ(), roleEnv+"="+role)
	a.cmd.Stdout = &syncWriter{w: a.log}
	a.cmd.Stderr = a.cmd.Stdout
	if err := a.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		a.err = a.cmd.Wait()
		close(a.done)
	}()
	e.t.Cleanup(func() {
		_ = a.cmd.Process.Kill()
		<-a.done
		if e.t.Failed() {
			e.t.Logf("--- log of %s %s ---\n%s", role, name, a.logText())
		}
	})
	return a
}

// terminate stops the process with SIGTERM and checks a graceful stop:
// exit 0 within limit, the log saying it drained.
func (a *annotator) terminate(t *testing.T, limit time.Duration) {
	t.Helper()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.done:
		if a.err != nil {
			t.Fatalf("%s exited with %v after SIGTERM", a.name, a.err)
		}
	case <-time.After(limit):
		t.Fatalf("%s did not exit within %v of SIGTERM", a.name, limit)
	}
	if !strings.Contains(a.logText(), "drained") {
		t.Errorf("%s's log does not report draining", a.name)
	}
}

func (a *annotator) logText() string {
	w := a.cmd.Stdout.(*syncWriter)
	w.mu.Lock()
	defer w.mu.Unlock()
	return a.log.String()
}

// readyVersion returns the model version reported by /readyz, or "".
func (a *annotator) readyVersion() string {
	resp, err := http.Get("http://" + a.health + "/readyz")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	// The first line; a second one may name a refused current version.
	first, _, _ := strings.Cut(b.String(), "\n")
	return strings.TrimSpace(strings.TrimPrefix(first, "ok "))
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// outputs accumulates the annotation and dead-letter topics: each record
// once, by its position, since the tail (an observer that commits nothing)
// reads a topic again from its start when its group is rebuilt after a
// broker's death. times are the annotations' Kafka timestamps.
type outputs struct {
	mu    sync.Mutex
	anns  map[string][]wire.AnnotationMessage
	dead  []wire.DeadLetter
	seen  map[recordPos]bool
	times []time.Time
}

// recordPos is a record's place in the log.
type recordPos struct {
	topic     string
	partition int
	offset    int64
}

func (e *env) tail(ctx context.Context) *outputs {
	o := &outputs{anns: map[string][]wire.AnnotationMessage{}, seen: map[recordPos]bool{}}
	for _, topic := range []string{e.topics.Annotations, e.topics.DeadLetter} {
		go func() {
			err := kafkaio.Tail(ctx, e.brokers, e.sec, topic, func(m kafka.Message) error {
				o.mu.Lock()
				defer o.mu.Unlock()
				pos := recordPos{m.Topic, m.Partition, m.Offset}
				if o.seen[pos] {
					return nil
				}
				o.seen[pos] = true
				if topic == e.topics.Annotations {
					o.times = append(o.times, m.Time)
					var a wire.AnnotationMessage
					if err := json.Unmarshal(m.Value, &a); err != nil {
						return err
					}
					o.anns[a.BagID] = append(o.anns[a.BagID], a)
					return nil
				}
				var d wire.DeadLetter
				if err := json.Unmarshal(m.Value, &d); err != nil {
					return err
				}
				o.dead = append(o.dead, d)
				return nil
			})
			if err != nil {
				e.t.Errorf("tail %s: %v", topic, err)
			}
		}()
	}
	return o
}

func (o *outputs) counts() (ids, total, dead int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, as := range o.anns {
		total += len(as)
	}
	return len(o.anns), total, len(o.dead)
}

// waitIDs waits until n distinct bag ids were annotated.
func (o *outputs) waitIDs(t *testing.T, n int, limit time.Duration) {
	t.Helper()
	ids := 0
	streamtest.WaitExplained(t, limit, 20*time.Millisecond, func() bool {
		ids, _, _ = o.counts()
		return ids >= n
	}, func() string { return fmt.Sprintf("%d of %d bags annotated", ids, n) })
}

var (
	mscv2Once sync.Once
	mscv2     *mil.Dataset
	mscv2Blob []byte
	mscv2Err  error
)

// mscv2Model loads MSCV2 and fits ORed-LR on it once per test binary, with
// fewer EM iterations than the paper (the accuracy is still far above the
// baseline; the full setting is the eval tool's business).
func mscv2Model(t *testing.T) (*mil.Dataset, []byte) {
	t.Helper()
	return mscv2ModelTB(t)
}

func mscv2ModelB(b *testing.B) (*mil.Dataset, []byte) { return mscv2ModelTB(b) }

func mscv2ModelTB(t testing.TB) (*mil.Dataset, []byte) {
	t.Helper()
	mscv2Once.Do(func() {
		mscv2, mscv2Err = dataset.Load("../../testdata/mscv2/MSCV2.mat")
		if mscv2Err != nil {
			return
		}
		var m models.Model
		m, mscv2Err = orlr.Kind().Fit(context.Background(), mscv2, models.FitOptions{Seed: 1, Params: models.Params{"iters": "10", "msteps": "10"}})
		if mscv2Err != nil {
			return
		}
		mscv2Blob, mscv2Err = models.Encode(m)
	})
	if mscv2Err != nil {
		t.Fatal(mscv2Err)
	}
	return mscv2, mscv2Blob
}

// promote stores blob and makes it current.
func (e *env) promote(blob []byte) string {
	e.t.Helper()
	meta, err := e.reg.Put(context.Background(), blob, featurestore.VersionMeta{TrainingWindow: "e2e"})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.reg.Promote(context.Background(), meta.Version); err != nil {
		e.t.Fatal(err)
	}
	return meta.Version
}

func (e *env) publisher(fraction float64) *ingest.Publisher {
	e.t.Helper()
	p, err := ingest.NewPublisher(ingest.PublisherConfig{Brokers: e.brokers, Security: e.sec, Topics: e.topics, LabelFraction: fraction, Seed: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { p.Close() })
	return p
}

// publishPaced publishes ds in slices of 20 bags with a pause after each,
// in the background; the channel yields the outcome.
func publishPaced(ctx context.Context, pub *ingest.Publisher, ds *mil.Dataset, pause time.Duration) <-chan error {
	published := make(chan error, 1)
	go func() {
		for i := 0; i < len(ds.Bags); i += 20 {
			if _, err := pub.PublishDataset(ctx, ds, ds.Bags[i:min(i+20, len(ds.Bags))]); err != nil {
				published <- err
				return
			}
			time.Sleep(pause)
		}
		published <- nil
	}()
	return published
}

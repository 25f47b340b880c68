package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

func startBroker(t *testing.T) []string {
	return streamtest.StartBroker(t, 2, wire.DefaultTopics().All()...)
}

const goodBag = `{"schema_version":1,"id":"%s","dim":2,"instances":[[0.1,0.2]],"labels":[0],"classes":["a","b"]}`

func TestRunIngestFiles(t *testing.T) {
	brokers := startBroker(t)
	topics := wire.DefaultTopics()
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "bags.jsonl")
	body := fmt.Sprintf(goodBag, "j1") + "\n" + fmt.Sprintf(goodBag, "j2") + "\nnot json\n"
	if err := os.WriteFile(jsonl, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	env := service.Env{Stdout: &stdout, Stderr: &stderr}
	b := strings.Join(brokers, ",")
	if err := Command(context.Background(), env, []string{"--brokers", b, "--jsonl", jsonl, "--progress=false"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "published 2 bags (2 labeled") || !strings.Contains(stdout.String(), "rejected malformed_json") {
		t.Errorf("summary: %s", stdout.String())
	}
	// Wire-format lines from standard input.
	stdout.Reset()
	env.Stdin = strings.NewReader(fmt.Sprintf(goodBag, "s1") + "\n")
	if err := Command(context.Background(), env, []string{"--brokers", b, "--jsonl", "-"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "published 1 bags") {
		t.Errorf("stdin summary: %s", stdout.String())
	}
	// A dataset file through the loaders, with half the labels kept.
	stdout.Reset()
	args := []string{"--brokers", b, "--data", "../../../testdata/mscv2/MSCV2.mat", "--limit", "40", "--label-fraction", "0.5", "--progress=false"}
	if err := Command(context.Background(), env, args); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var published, labeled int
	if _, err := fmt.Sscanf(stdout.String(), "ingest: published %d bags (%d labeled", &published, &labeled); err != nil {
		t.Fatalf("summary %q: %v", stdout.String(), err)
	}
	if published != 40 || labeled < 10 || labeled > 30 {
		t.Errorf("published %d, labeled %d; want 40 and about 20", published, labeled)
	}
	readTopic(t, brokers, topics.Annotate, 43)
	readTopic(t, brokers, topics.Train, 3+labeled)
	// Bad command lines fail as usage errors.
	if err := Command(context.Background(), env, []string{"--brokers", b}); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("no input: %v, want a usage error", err)
	}
	if err := Command(context.Background(), env, []string{"--jsonl", jsonl}); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("missing --brokers: %v, want a usage error", err)
	}
}

// TestListenFailureStopsTheService checks that an ingest endpoint whose
// address is taken fails the command (exit 1) instead of running without
// its listener.
func TestListenFailureStopsTheService(t *testing.T) {
	brokers := startBroker(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var stdout, stderr bytes.Buffer
	env := service.Env{Stdout: &stdout, Stderr: &stderr}
	err = Command(context.Background(), env, []string{"--brokers", strings.Join(brokers, ","), "--listen", taken.Addr().String()})
	if err == nil || errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "listen "+taken.Addr().String()) {
		t.Fatalf("listen on a taken address: %v, want a runtime failure naming the address", err)
	}
	if code := cli.ExitCode("ingest", &stderr, err); code != cli.ExitFailure {
		t.Errorf("exit code %d, want %d", code, cli.ExitFailure)
	}
}

// TestListenServesUntilStopped runs ingest --listen, posts a bag, and stops
// it as SIGTERM would: the command returns nil and prints its summary.
func TestListenServesUntilStopped(t *testing.T) {
	brokers := startBroker(t)
	addr := freeAddr(t)
	stdout, _, stop := startCommand(t, "--brokers", strings.Join(brokers, ","), "--listen", addr, "--log-level", "warn")
	var resp *http.Response
	streamtest.WaitFor(t, 10*time.Second, "ingest endpoint up", func() bool {
		var err error
		resp, err = http.Post("http://"+addr+"/bags", "application/json", strings.NewReader(fmt.Sprintf(goodBag, "l1")))
		return err == nil
	})
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	stopPublished(t, stop, stdout, 1)
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("the endpoint still answers after the service stopped")
	}
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

// TestWireFormatFlag: ingest --wire-format protobuf publishes a JSON lines
// file as binary bags (decoding to the bags of the lines); an unknown
// format is a usage error naming the flag before anything connects.
// Catches the flag not reaching the publisher, and a typo silently
// published as JSON.
func TestWireFormatFlag(t *testing.T) {
	var out bytes.Buffer
	env := service.Env{Stdout: &out, Stderr: &out}
	err := Command(context.Background(), env, []string{"--brokers", "127.0.0.1:1", "--jsonl", "-", "--wire-format", "proto"})
	if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "wire-format") {
		t.Errorf("--wire-format proto: %v, want a usage error naming the flag", err)
	}
	brokers := startBroker(t)
	jsonl := filepath.Join(t.TempDir(), "bags.jsonl")
	if err := os.WriteFile(jsonl, []byte(fmt.Sprintf(goodBag, "wf-1")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Command(context.Background(), env, []string{"--brokers", strings.Join(brokers, ","), "--jsonl", jsonl, "--wire-format", "protobuf"}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	raw := readTopic(t, brokers, wire.DefaultTopics().Annotate, 1)[0]
	v, _ := wire.NewValidator(0)
	got, err := v.DecodeBagProto(raw)
	want, _ := v.DecodeBag([]byte(fmt.Sprintf(goodBag, "wf-1")))
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("published %+v %v, want %+v", got, err, want)
	}
}

// TestLingerFlag: --linger (and its environment variable) reaches the
// config, and its default is the producer's.
func TestLingerFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, kafkaio.DefaultLinger},
		{[]string{"--linger", "300us"}, 300 * time.Microsecond},
	} {
		fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
		cfg := DefaultConfig()
		cfg.register(fs)
		if err := fs.Parse(c.args); err != nil || cfg.Linger != c.want {
			t.Errorf("%q: linger %v %v, want %v", c.args, cfg.Linger, err, c.want)
		}
	}
	var out bytes.Buffer
	err := Command(context.Background(), service.Env{Stdout: &out, Stderr: &out}, []string{"--brokers", "127.0.0.1:1", "--jsonl", "-", "--linger", "soon"})
	if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "linger") {
		t.Errorf("--linger soon: %v, want a usage error naming the flag", err)
	}
}

// TestIngestSparseFile: a MILL sparse file through ingest's file path goes
// out sparse, in either wire format: every message carries
// sparse_instances (no dense rows), and decodes to the bag the loader
// read, indices and values alike. Catches the dataset densified on the
// way (the wire once carried dense rows only) and a sparse bag altered by
// either encoder.
func TestIngestSparseFile(t *testing.T) {
	brokers := startBroker(t)
	topics := wire.DefaultTopics()
	path := filepath.Join(t.TempDir(), "sparse.data")
	// Four bags over 70000 features (1-based in the file): dense, each row would be 560 KB.
	body := "i1,b1,1,5:2,1:0.5,70000:-3\ni2,b1,1,\ni3,b2,0,2:1\ni4,b3,0,1:1e-7,7:4\ni5,b3,0,7:1\ni6,b4,1,40000:2.5\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !ds.IsSparse() || ds.Dim != 70000 || len(ds.Bags) != 4 {
		t.Fatalf("loaded %d bags, dim %d, sparse %v", len(ds.Bags), ds.Dim, ds.IsSparse())
	}
	v, _ := wire.NewValidator(0)
	want := map[string]*wire.BagMessage{}
	for i := range ds.Bags {
		raw, _ := json.Marshal(wire.NewBagMessage(&ds.Bags[i], ds.Name, ds.Dim, ds.Classes, false))
		if want[ds.Bags[i].ID], err = v.DecodeBag(raw); err != nil {
			t.Fatal(err)
		}
	}
	b := strings.Join(brokers, ",")
	for _, format := range []wire.Format{wire.FormatJSON, wire.FormatProtobuf} {
		var stdout, stderr bytes.Buffer
		env := service.Env{Stdout: &stdout, Stderr: &stderr}
		args := []string{"--brokers", b, "--data", path, "--label-fraction", "1", "--progress=false", "--wire-format", string(format)}
		if err := Command(context.Background(), env, args); err != nil {
			t.Fatalf("%s: %v\n%s", format, err, stderr.String())
		}
		if !strings.Contains(stdout.String(), "published 4 bags") {
			t.Fatalf("%s: summary %s", format, stdout.String())
		}
	}
	// The topic has two partitions: the messages of the two runs come in
	// any order; the content type says which run wrote each.
	perType := map[string]int{}
	for _, m := range readMessages(t, brokers, topics.Annotate, 8) {
		ct := kafkaio.ContentType(m.Headers)
		perType[ct]++
		if ct == wire.ContentTypeJSON && (!bytes.Contains(m.Value, []byte(`"sparse_instances":[`)) || bytes.Contains(m.Value, []byte(`"instances"`))) {
			t.Errorf("%s is not sparse: %.200s", m.Key, m.Value)
		}
		// A dense bag of dim 70000 would be over 500 KB.
		if len(m.Value) > 1000 {
			t.Errorf("%s (%s) is %d bytes: densified?", m.Key, ct, len(m.Value))
		}
		bm, err := v.DecodeBagAs(ct, m.Value)
		if err != nil {
			t.Fatalf("%s (%s): %v", m.Key, ct, err)
		}
		if bm.Instances != nil || !reflect.DeepEqual(bm, want[bm.ID]) {
			t.Errorf("%s: got %+v, want %+v", ct, bm, want[bm.ID])
		}
	}
	if perType[wire.ContentTypeJSON] != 4 || perType[wire.ContentTypeProtobuf] != 4 {
		t.Errorf("content types %v, want 4 of each", perType)
	}
}

// TestJSONLNamesRejectedLines: `ingest --jsonl -` names each rejected line
// on stderr, with the bag id when it could be read, and the dead letters
// are keyed by that id.
func TestJSONLNamesRejectedLines(t *testing.T) {
	brokers := startBroker(t)
	var stdout, stderr bytes.Buffer
	body := fmt.Sprintf(goodBag, "ok-1") + "\n" + `{"schema_version":1,"id":"nf-1","dim":2,"instances":[[1,"NaN"]]}` + "\n\nnot json\n" +
		`{"schema_version":1,"id":"dim-1","dim":2,"instances":[[1,2,3]]}` + "\n"
	env := service.Env{Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(body)}
	if err := Command(context.Background(), env, []string{"--brokers", strings.Join(brokers, ","), "--jsonl", "-", "--batch", "2"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for _, want := range []string{`stdin:2: bag "nf-1" rejected: non_finite`, `stdin:4: rejected: malformed_json`, `stdin:5: bag "dim-1" rejected: dimension`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	keys := deadLetterKeys(t, brokers, wire.DefaultTopics().DeadLetter, 3)
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"", "dim-1", "nf-1"}) {
		t.Errorf("dead-letter keys %q, want the ids that could be read", keys)
	}
	t.Logf("stderr:\n%s", stderr.String())
}

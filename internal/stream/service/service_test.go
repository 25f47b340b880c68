package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream"
	"github.com/mimlstream/mimlstream/internal/stream/streamtest"
)

func startBroker(t *testing.T) []string {
	return streamtest.StartBroker(t, 2, stream.DefaultTopics().All()...)
}

// readTopic returns the values of the first n messages of topic.
func readTopic(t *testing.T, brokers []string, topic string, n int) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var out [][]byte
	err := stream.Tail(ctx, brokers, topic, fmt.Sprintf("read-%s-%d", topic, time.Now().UnixNano()), func(m kafka.Message) error {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, m.Value)
		if len(out) >= n {
			return stream.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < n {
		t.Fatalf("%s: %d messages, want %d", topic, len(out), n)
	}
	return out
}

const goodBag = `{"schema_version":1,"id":"%s","dim":2,"instances":[[0.1,0.2]],"labels":[0],"classes":["a","b"]}`

func TestIngestHandler(t *testing.T) {
	brokers := startBroker(t)
	topics := stream.DefaultTopics()
	pub, err := stream.NewPublisher(stream.PublisherConfig{Brokers: brokers, Topics: topics, LabelFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	srv := httptest.NewServer(IngestHandler(pub, 1<<20))
	defer srv.Close()
	cases := []struct {
		name       string
		body       string
		status     int
		accepted   int
		rejections []stream.Reason
	}{
		{"one bag", fmt.Sprintf(goodBag, "h1"), http.StatusOK, 1, nil},
		{"lines with a bad one", fmt.Sprintf(goodBag, "h2") + "\n" + `{"schema_version":1,"id":"x","dim":2,"instances":[[1,"NaN"]]}` + "\n\n" + fmt.Sprintf(goodBag, "h3") + "\n",
			http.StatusUnprocessableEntity, 2, []stream.Reason{stream.ReasonNonFinite}},
		{"empty", "  \n", http.StatusBadRequest, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/bags", "application/x-ndjson", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if c.status == http.StatusBadRequest {
				return
			}
			var r ingestResponse
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
				t.Fatal(err)
			}
			if r.Accepted != c.accepted || len(r.Rejected) != len(c.rejections) {
				t.Fatalf("response %+v", r)
			}
			for i, want := range c.rejections {
				if r.Rejected[i].Reason != want {
					t.Errorf("rejection %d: %s, want %s", i, r.Rejected[i].Reason, want)
				}
			}
		})
	}
	// Three bags reached the annotate and training topics, one dead letter
	// the dead-letter topic.
	readTopic(t, brokers, topics.Annotate, 3)
	readTopic(t, brokers, topics.Train, 3)
	d := readTopic(t, brokers, topics.DeadLetter, 1)
	var dl stream.DeadLetter
	if err := json.Unmarshal(d[0], &dl); err != nil || dl.Stage != stream.StageIngest || dl.Reason != stream.ReasonNonFinite {
		t.Fatalf("dead letter %+v %v", dl, err)
	}
}

func TestRunIngestFiles(t *testing.T) {
	brokers := startBroker(t)
	topics := stream.DefaultTopics()
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "bags.jsonl")
	body := fmt.Sprintf(goodBag, "j1") + "\n" + fmt.Sprintf(goodBag, "j2") + "\nnot json\n"
	if err := os.WriteFile(jsonl, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	env := Env{Stdout: &stdout, Stderr: &stderr, Kinds: models.NewRegistry()}
	b := strings.Join(brokers, ",")
	if err := RunIngest(context.Background(), env, []string{"--brokers", b, "--jsonl", jsonl, "--progress=false"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "published 2 bags (2 labeled") || !strings.Contains(stdout.String(), "rejected malformed_json") {
		t.Errorf("summary: %s", stdout.String())
	}
	// Wire-format lines from standard input.
	stdout.Reset()
	env.Stdin = strings.NewReader(fmt.Sprintf(goodBag, "s1") + "\n")
	if err := RunIngest(context.Background(), env, []string{"--brokers", b, "--jsonl", "-"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "published 1 bags") {
		t.Errorf("stdin summary: %s", stdout.String())
	}
	// A dataset file through the loaders, with half the labels kept.
	stdout.Reset()
	args := []string{"--brokers", b, "--data", "../../../testdata/mscv2/MSCV2.mat", "--limit", "40", "--label-fraction", "0.5", "--progress=false"}
	if err := RunIngest(context.Background(), env, args); err != nil {
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
	// Bad command lines fail.
	if err := RunIngest(context.Background(), env, []string{"--brokers", b}); err == nil {
		t.Error("no input accepted")
	}
	if err := RunIngest(context.Background(), env, []string{"--jsonl", jsonl}); err == nil {
		t.Error("missing --brokers accepted")
	}
}

func TestRunFitPublishesAndPromotes(t *testing.T) {
	addr, rdb, _ := streamtest.StartRedis(t)
	var stdout, stderr bytes.Buffer
	env := Env{Stdout: &stdout, Stderr: &stderr, Kinds: models.NewRegistry(streamtest.CentroidKind())}
	args := []string{"--redis", addr, "--registry-prefix", "fit", "--data", "../../../testdata/mscv2/MSCV2.mat", "--model", streamtest.KindName,
		"--param", "iters=2", "--promote"}
	if err := RunFit(context.Background(), env, args); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var got struct {
		Version  string `json:"version"`
		Kind     string `json:"kind"`
		Dim      int    `json:"dim"`
		Promoted bool   `json:"promoted"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if got.Version != "v1" || got.Kind != streamtest.KindName || got.Dim != 48 || !got.Promoted {
		t.Errorf("fit output %+v", got)
	}
	blob, meta, err := featurestore.NewRegistry(rdb, "fit").Current(context.Background())
	if err != nil || meta.Version != "v1" {
		t.Fatalf("current %s, %v", meta.Version, err)
	}
	m, err := env.Kinds.Decode(blob)
	if err != nil || m.Meta().Params["iters"] != "2" {
		t.Fatalf("stored model %v, %v", m, err)
	}
	if err := RunFit(context.Background(), env, []string{"--redis", addr, "--data", "x.mat", "--model", "nope"}); err == nil {
		t.Error("unknown kind accepted")
	}
}

func TestRedisOptions(t *testing.T) {
	cases := []struct {
		in   redisFlags
		want featurestore.Options
	}{
		{redisFlags{addr: "h:1", password: "p", db: 3}, featurestore.Options{Addr: "h:1", Password: "p", DB: 3}},
		{redisFlags{addr: "redis://u:pw@h:6380/2"}, featurestore.Options{Addr: "h:6380", Username: "u", Password: "pw", DB: 2}},
		{redisFlags{addr: "rediss://h:6380"}, featurestore.Options{Addr: "h:6380", TLS: true}},
		{redisFlags{addr: "redis://h:6380", password: "flag"}, featurestore.Options{Addr: "h:6380", Password: "flag"}},
		{redisFlags{addr: "redis://h:6380", db: 4}, featurestore.Options{Addr: "h:6380", DB: 4}},
		{redisFlags{addr: "redis://h:6380/1", db: 4}, featurestore.Options{Addr: "h:6380", DB: 1}},
	}
	for _, c := range cases {
		got, err := c.in.options()
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.in.addr, got, c.want)
		}
	}
	if _, err := (&redisFlags{addr: "redis://h:x/y"}).options(); err == nil {
		t.Error("bad URL accepted")
	}
}

// TestRunRetrainerServe runs the retrainer service on a stream of labeled
// bags until it has promoted a model, then stops it. Two stale versions
// stored beforehand are pruned (--keep-versions, set here through its
// environment variable).
func TestRunRetrainerServe(t *testing.T) {
	t.Setenv(cli.EnvName("retrainer-serve", "keep-versions"), "1")
	brokers := startBroker(t)
	addr, rdb, _ := streamtest.StartRedis(t)
	reg := featurestore.NewRegistry(rdb, "serve")
	stale := &mil.Dataset{Classes: []string{"a", "b"}, Dim: 2, Bags: []mil.Bag{
		{ID: "s0", Instances: [][]float64{{0, 0.5}}, Labels: []int{0}}, {ID: "s1", Instances: [][]float64{{5, 0.5}}, Labels: []int{1}}}}
	m, err := streamtest.CentroidKind().Fit(context.Background(), stale, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blob, _ := models.Encode(m)
	for range 2 {
		if _, err := reg.Put(context.Background(), blob, featurestore.VersionMeta{}); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr syncBuffer
	env := Env{Stdout: &stdout, Stderr: &stderr, Kinds: models.NewRegistry(streamtest.CentroidKind())}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunRetrainerServe(ctx, env, []string{"--brokers", strings.Join(brokers, ","), "--redis", addr, "--registry-prefix", "serve",
			"--model", streamtest.KindName, "--every", "20", "--min-bags", "20", "--listen", "", "--subset", "0.5"})
	}()
	var stdin bytes.Buffer
	for i := range 40 {
		fmt.Fprintf(&stdin, `{"schema_version":1,"id":"t%d","dim":2,"instances":[[%d,0.5]],"labels":[%d],"classes":["a","b"]}`+"\n", i, i%2*5, i%2)
	}
	ienv := Env{Stdin: &stdin, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Kinds: env.Kinds}
	if err := RunIngest(context.Background(), ienv, []string{"--brokers", strings.Join(brokers, ","), "--jsonl", "-"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	var meta featurestore.VersionMeta
	for {
		_, meta, err = reg.Current(context.Background())
		if err == nil && meta.Version == "v4" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no second model promoted: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The toy classes are separable: the held-out loss is zero.
	if loss, ok := meta.Metrics["heldout_hamming_loss"]; meta.Kind != streamtest.KindName || meta.Parent != "v3" || !ok || loss != 0 {
		t.Errorf("promoted %+v", meta)
	}
	// The first promotion (v3) pruned the stale v1 and v2; the second kept
	// v3, now previous.
	vs, err := reg.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Version != "v3" || vs[1].Version != "v4" {
		t.Errorf("registry holds %+v, want v3 and v4", vs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for a service's concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/httpguard"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/syncbuf"
)

// startCluster starts a one-broker cluster holding the default topics.
func startCluster(t *testing.T) ([]string, wire.Topics) {
	t.Helper()
	topics := wire.DefaultTopics()
	return streamtest.StartBroker(t, 1, topics.All()...), topics
}

// realRedis connects to the real Redis (redistest.Real: under CI=true
// its absence fails the test) and returns a client, its address and a
// key prefix of the test's own, whose keys are deleted at its end.
func realRedis(t *testing.T, name string) (rdb *redis.Client, addr, prefix string) {
	t.Helper()
	addr = redistest.Real(t)
	rdb = redis.NewClient(&redis.Options{Addr: addr})
	prefix = fmt.Sprintf("test-%s-%d", name, time.Now().UnixNano())
	t.Cleanup(func() {
		defer rdb.Close()
		keys, _ := rdb.Keys(context.Background(), "{"+prefix+"}*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
	})
	return rdb, addr, prefix
}

// startPublisher starts a one-broker cluster holding the default topics
// and a publisher on it (cfg with its brokers and topics filled in),
// closed at the end of the test.
func startPublisher(t *testing.T, cfg PublisherConfig) (*Publisher, []string, wire.Topics) {
	t.Helper()
	brokers, topics := startCluster(t)
	cfg.Brokers, cfg.Topics = brokers, topics
	p, err := NewPublisher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, brokers, topics
}

// firstBag returns the first bag of topic, decoded by its content type,
// and that content type; it fails the test when none comes within 20 s.
func firstBag(t *testing.T, brokers []string, topic string) (*wire.BagMessage, string) {
	t.Helper()
	m := readMessages(t, brokers, topic, 1)[0]
	ct := kafkaio.ContentType(m.Headers)
	v, _ := wire.NewValidator(0)
	bag, err := v.DecodeBagAs(ct, m.Value)
	if err != nil {
		t.Fatalf("bag on %s (%s): %v", topic, ct, err)
	}
	return bag, ct
}

// deadLetters reads the dead-letter topic until n keys are seen (or 20 s
// have passed): each key's reason, a space and its original.
func deadLetters(t *testing.T, brokers []string, topic string, n int) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	dead := map[string]string{}
	err := kafkaio.Tail(ctx, brokers, kafkasec.Conn{}, topic, func(m kafka.Message) error {
		var d wire.DeadLetter
		if err := json.Unmarshal(m.Value, &d); err != nil {
			return err
		}
		dead[d.Key] = string(d.Reason) + " " + string(d.Original)
		if len(dead) == n {
			return kafkaio.ErrStop
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	return dead
}

// wantDeadLetters checks that each bag of want is dead-lettered with its
// reason, its manifest line (starting {"id":"ID") as the original.
func wantDeadLetters(t *testing.T, brokers []string, topic string, want map[string]wire.Reason) {
	t.Helper()
	dead := deadLetters(t, brokers, topic, len(want))
	for id, r := range want {
		if w := string(r) + ` {"id":"` + id + `"`; !strings.HasPrefix(dead[id], w) {
			t.Errorf("dead letter of %s: %q, want reason %s and its manifest line", id, dead[id], r)
		}
	}
}

// readBags returns the first n bags of topic, decoded (a message that
// does not decode fails the test).
func readBags(t *testing.T, brokers []string, topic string, n int) []*wire.BagMessage {
	t.Helper()
	v, _ := wire.NewValidator(0)
	var out []*wire.BagMessage
	for _, raw := range readTopic(t, brokers, topic, n) {
		m, err := v.DecodeBag(raw)
		if err != nil {
			t.Fatalf("bag on %s: %v", topic, err)
		}
		out = append(out, m)
	}
	return out
}

// deadLetterKeys returns the keys of the first n dead letters of topic.
func deadLetterKeys(t *testing.T, brokers []string, topic string, n int) []string {
	t.Helper()
	var keys []string
	for _, raw := range readTopic(t, brokers, topic, n) {
		var d wire.DeadLetter
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, d.Key)
	}
	return keys
}

// postMedia posts body to url's POST /media with the query, content type
// and bearer token ("" none), and returns the status and the answer.
func postMedia(t *testing.T, url, query, ctype, token string, body []byte) (int, MediaResult) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/media?"+query, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res MediaResult
	_ = json.NewDecoder(resp.Body).Decode(&res)
	return resp.StatusCode, res
}

// readTopic returns the values of the first n messages of topic.
func readTopic(t *testing.T, brokers []string, topic string, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for _, m := range readMessages(t, brokers, topic, n) {
		out = append(out, m.Value)
	}
	return out
}

// readMessages returns the first n messages of topic.
func readMessages(t *testing.T, brokers []string, topic string, n int) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var out []kafka.Message
	err := kafkaio.Tail(ctx, brokers, kafkasec.Conn{}, topic, func(m kafka.Message) error {
		out = append(out, m)
		if len(out) >= n {
			return kafkaio.ErrStop
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

// runCommand runs ingest to its end and returns what it printed; an
// error fails the test, with the standard error.
func runCommand(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errs syncbuf.Buffer
	if err := Command(t.Context(), service.Env{Stdout: &out, Stderr: &errs}, args); err != nil {
		t.Fatalf("ingest %q: %v\n%s", args, err, errs.String())
	}
	return out.String(), errs.String()
}

// startCommand runs ingest in the background (--listen, say) until stop,
// which ends it as SIGTERM would and returns its error.
func startCommand(t *testing.T, args ...string) (stdout, stderr *syncbuf.Buffer, stop func() error) {
	t.Helper()
	stdout, stderr = new(syncbuf.Buffer), new(syncbuf.Buffer)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Command(ctx, service.Env{Stdout: stdout, Stderr: stderr}, args) }()
	var err error
	stopped := false
	stop = func() error {
		if !stopped {
			cancel()
			err, stopped = <-done, true
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stdout, stderr, stop
}

// stopPublished stops a command startCommand started and checks that it
// returned nil and printed a summary of n bags published.
func stopPublished(t *testing.T, stop func() error, stdout *syncbuf.Buffer, n int) {
	t.Helper()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("published %d bags", n); !strings.Contains(stdout.String(), want) {
		t.Errorf("summary %q, want %q", stdout.String(), want)
	}
}

// tokenFile writes a bearer token file of the test's and returns its
// path.
func tokenFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadTokens is the tokens of a token file holding content.
func loadTokens(t *testing.T, content string) *httpguard.Tokens {
	t.Helper()
	toks, err := httpguard.LoadTokens(tokenFile(t, content))
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

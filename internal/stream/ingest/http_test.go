package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/httpguard"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/syncbuf"
	"github.com/mimlstream/mimlstream/internal/testsupport/tlstest"
	"github.com/mimlstream/mimlstream/schemas"
)

const responseSchemaFile = "ingest-response.schema.json"

// responseSchema compiles schemas/ingest-response.schema.json.
func responseSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	raw, err := schemas.Raw(responseSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "https://mimlstream.dev/schemas/" + responseSchemaFile
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// decodeResult checks an answer against the schema and decodes it,
// refusing fields BagsResult does not have.
func decodeResult(t testing.TB, s *jsonschema.Schema, body []byte) BagsResult {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, body)
	}
	if err := s.Validate(doc); err != nil {
		t.Fatalf("answer does not match %s: %v\n%s", responseSchemaFile, err, body)
	}
	var r BagsResult
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("answer: %v\n%s", err, body)
	}
	return r
}

// TestResponseSchema: the schema's properties are BagsResult's fields, its
// reasons the dead-letter schema's, and it refuses answers that break it,
// so the validation in the other tests can fail.
func TestResponseSchema(t *testing.T) {
	s := responseSchema(t)
	raw, _ := schemas.Raw(responseSchemaFile)
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var props []string
	for p := range doc.Properties {
		props = append(props, p)
	}
	slices.Sort(props)
	want := []string{"accepted", "accepted_ids", "complete", "error", "lines", "next_line", "rejected"}
	if !slices.Equal(props, want) {
		t.Errorf("schema properties %v, want BagsResult's %v", props, want)
	}
	reasons := func(file, path string) string {
		raw, _ := schemas.Raw(file)
		var d any
		_ = json.Unmarshal(raw, &d)
		for _, k := range strings.Split(path, ".") {
			d = d.(map[string]any)[k]
		}
		b, _ := json.Marshal(d)
		return string(b)
	}
	if a, b := reasons(responseSchemaFile, "properties.rejected.items.properties.reason.enum"), reasons(schemas.DeadLetterFile, "properties.reason.enum"); a != b {
		t.Errorf("reasons %s differ from the dead-letter schema's %s", a, b)
	}
	for _, bad := range []string{
		`{"accepted":1,"accepted_ids":["a"],"rejected":[],"lines":1}`,
		`{"accepted":0,"accepted_ids":[],"rejected":[],"lines":3,"complete":false}`,
		`{"accepted":0,"accepted_ids":[],"rejected":[{"line":0,"reason":"schema","error":"x"}],"lines":1,"complete":true}`,
		`{"accepted":0,"accepted_ids":[],"rejected":[{"line":1,"reason":"bogus","error":"x"}],"lines":1,"complete":true}`,
		`{"accepted":0,"accepted_ids":[],"rejected":[],"lines":1,"complete":true,"extra":1}`,
	} {
		d, _ := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if s.Validate(d) == nil {
			t.Errorf("schema accepts %s", bad)
		}
	}
}

func newPublisher(t *testing.T, brokers []string, maxMessageBytes int) *Publisher {
	t.Helper()
	pub, err := NewPublisher(PublisherConfig{Brokers: brokers, Topics: wire.DefaultTopics(), LabelFraction: 1, MaxMessageBytes: maxMessageBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	return pub
}

// serve runs Handler behind the command's server (httpguard.Listen) on
// loopback.
func serve(t *testing.T, pub *Publisher, hc HTTPConfig, to httpguard.Timeouts, cert, key string) string {
	t.Helper()
	srv, err := httpguard.Listen(httpguard.ServerConfig{Addr: "127.0.0.1:0", Handler: Handler(pub, hc, nil), Timeouts: to, CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return srv.Addr().String()
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func post(t testing.TB, client *http.Client, url, token string, body io.Reader) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

const badBag = `{"schema_version":1,"id":"bad","dim":2,"instances":[[1,"NaN"]]}`

// TestBagsPerLineResult posts bodies mixing good, bad, blank and oversize
// lines, and checks every answer against the schema and against what was
// sent: a client learns which lines to resend and which ids went through.
func TestBagsPerLineResult(t *testing.T) {
	brokers := startBroker(t)
	topics := wire.DefaultTopics()
	s := responseSchema(t)
	// The line limit (300) makes the long line oversize; the publisher's
	// message limit stays Kafka's, so that the rejected lines' dead
	// letters (bounded by that limit) fit.
	pub := newPublisher(t, brokers, 1<<20)
	addr := serve(t, pub, HTTPConfig{MaxLineBytes: 300, MaxBodyBytes: 1 << 20, Batch: 2}, httpguard.DefaultTimeouts(), "", "")
	url := "http://" + addr + "/bags"
	long := `{"schema_version":1,"id":"long","dim":1,"instances":[` + strings.Repeat("[0.5],", 80) + `[0.5]]}`
	cases := []struct {
		name     string
		body     string
		status   int
		ids      []string
		rejected map[int]wire.Reason
		lines    int
	}{
		{"one bag", fmt.Sprintf(goodBag, "h1"), http.StatusOK, []string{"h1"}, nil, 1},
		{"one bad line among good ones", fmt.Sprintf(goodBag, "h2") + "\n" + badBag + "\n\n" + fmt.Sprintf(goodBag, "h3") + "\n",
			http.StatusUnprocessableEntity, []string{"h2", "h3"}, map[int]wire.Reason{2: wire.ReasonNonFinite}, 4},
		{"oversize line, never buffered", fmt.Sprintf(goodBag, "h4") + "\n" + long + "\n" + fmt.Sprintf(goodBag, "h5"),
			http.StatusUnprocessableEntity, []string{"h4", "h5"}, map[int]wire.Reason{2: wire.ReasonOversize}, 3},
		{"ambiguous lines", `{"schema_version":1,"id":"x","id":"y","dim":2,"instances":[[0.1,0.2]]}` + "\r\n" +
			"{\"schema_version\":1,\"id\":\"z\xff\",\"dim\":2,\"instances\":[[0.1,0.2]]}\n" + fmt.Sprintf(goodBag, `h6\"q\u00e9`),
			http.StatusUnprocessableEntity, []string{`h6"qé`}, map[int]wire.Reason{1: wire.ReasonMalformedJSON, 2: wire.ReasonMalformedJSON}, 3},
		{"blank", "  \n\n", http.StatusBadRequest, nil, nil, 2},
		{"nothing", "", http.StatusBadRequest, nil, nil, 0},
	}
	published := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := post(t, http.DefaultClient, url, "", strings.NewReader(c.body))
			if a.status != c.status {
				t.Fatalf("status %d, want %d: %s", a.status, c.status, a.body)
			}
			r := decodeResult(t, s, a.body)
			if !r.Complete || r.Lines != c.lines || r.Accepted != len(c.ids) || !slices.Equal(r.AcceptedIDs, append([]string{}, c.ids...)) {
				t.Errorf("answer %+v; want complete, %d lines, ids %q", r, c.lines, c.ids)
			}
			if len(r.Rejected) != len(c.rejected) {
				t.Fatalf("rejected %+v, want lines %v", r.Rejected, c.rejected)
			}
			for _, x := range r.Rejected {
				if c.rejected[x.Line] != x.Reason || x.Error == "" {
					t.Errorf("rejection %+v, want lines %v", x, c.rejected)
				}
			}
			if c.status == http.StatusBadRequest && r.Error != "empty body" {
				t.Errorf("error %q, want empty body", r.Error)
			}
			published += len(c.ids)
		})
	}
	// The accepted bags reached the topics; the rejected ones that were
	// read and the oversize line are dead letters.
	readTopic(t, brokers, topics.Annotate, published)
	dead := readTopic(t, brokers, topics.DeadLetter, 4)
	for _, d := range dead {
		var dl wire.DeadLetter
		if err := json.Unmarshal(d, &dl); err != nil || dl.Stage != wire.StageIngest {
			t.Fatalf("dead letter %s: %v", d, err)
		}
	}
}

// TestBagsStopsAfterTooManyRejections: a body of garbage is not read to its
// end; the answer says where to resume.
func TestBagsStopsAfterTooManyRejections(t *testing.T) {
	brokers := startBroker(t)
	s := responseSchema(t)
	pub := newPublisher(t, brokers, 1<<20)
	addr := serve(t, pub, HTTPConfig{MaxLineBytes: 1 << 20, Batch: 64}, httpguard.DefaultTimeouts(), "", "")
	body := fmt.Sprintf(goodBag, "first") + "\n" + strings.Repeat("not json\n", 3000)
	a := post(t, http.DefaultClient, "http://"+addr+"/bags", "", strings.NewReader(body))
	r := decodeResult(t, s, a.body)
	if a.status != http.StatusUnprocessableEntity || r.Complete || len(r.Rejected) != maxRejectedLines || r.NextLine != maxRejectedLines+2 ||
		!slices.Equal(r.AcceptedIDs, []string{"first"}) {
		t.Fatalf("status %d, answer complete=%v rejected=%d next_line=%d ids=%v error=%q", a.status, r.Complete, len(r.Rejected), r.NextLine, r.AcceptedIDs, r.Error)
	}
}

// TestBagsAuth: without the token, with a wrong one or another scheme, the
// answer is the same 401, nothing is published; with a token from the
// file, the bag goes through; /healthz needs none.
func TestBagsAuth(t *testing.T) {
	brokers := startBroker(t)
	cfg := DefaultConfig()
	cfg.AuthTokenFile = tokenFile(t, "# ingest clients\nalpha-token-1\n\nbeta-token-2\n")
	hc, err := cfg.HTTPConfig()
	if err != nil {
		t.Fatal(err)
	}
	pub := newPublisher(t, brokers, 1<<20)
	addr := serve(t, pub, hc, httpguard.DefaultTimeouts(), "", "")
	url := "http://" + addr + "/bags"
	var first []byte
	for _, h := range []string{"", "Bearer", "Bearer ", "Bearer alpha-token", "Bearer alpha-token-12", "Basic alpha-token-1", "Bearer-alpha-token-1", "Bearer beta-token-2 x"} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(goodBag, "a1")))
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: status %d, want 401 with WWW-Authenticate", h, resp.StatusCode)
		}
		// One answer for every failure: it says nothing of what was wrong.
		if first == nil {
			first = body
		} else if !bytes.Equal(body, first) {
			t.Errorf("Authorization %q: answer %q differs from %q", h, body, first)
		}
	}
	if st := pub.Stats(); st.Published != 0 {
		t.Fatalf("%d bags published without a valid token", st.Published)
	}
	for _, tok := range []string{"alpha-token-1", "beta-token-2"} {
		if a := post(t, http.DefaultClient, url, tok, strings.NewReader(fmt.Sprintf(goodBag, tok))); a.status != http.StatusOK {
			t.Errorf("token %s: status %d: %s", tok, a.status, a.body)
		}
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz without a token: %v %v", resp, err)
	}
	resp.Body.Close()
	// The scheme is case-insensitive (RFC 7235).
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(goodBag, "lower")))
	req.Header.Set("Authorization", "bearer alpha-token-1")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("lower-case bearer: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if st := pub.Stats(); st.Published != 3 {
		t.Errorf("published %d, want 3", st.Published)
	}
}

// TestBagsConcurrencyBound: with two requests in flight (bodies still
// arriving), a third is answered 503 with Retry-After at once; once they
// finish, requests go through again.
func TestBagsConcurrencyBound(t *testing.T) {
	brokers := startBroker(t)
	pub := newPublisher(t, brokers, 1<<20)
	// Batch 1: a line is published as soon as it is read, so a bag on
	// the topic says its request holds a slot.
	addr := serve(t, pub, HTTPConfig{MaxLineBytes: 1 << 20, Batch: 1, MaxConcurrent: 2}, httpguard.DefaultTimeouts(), "", "")
	url := "http://" + addr + "/bags"
	// A client of its own: no idle connection pooled by another test (on a
	// port the kernel may have handed out again) is reused here.
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	var writers []*io.PipeWriter
	var wg sync.WaitGroup
	statuses := make(chan int, 2)
	for i := range 2 {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		wg.Go(func() { statuses <- post(t, client, url, "", pr).status })
		// The first line arrives; the body stays open.
		if _, err := fmt.Fprintf(pw, goodBag+"\n", fmt.Sprint("slow-", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Both slow requests are in the handler once their first line is
	// published. (Probing the bound with requests of its own instead took
	// a slot while a slow request arrived, which was then refused.)
	readTopic(t, brokers, wire.DefaultTopics().Annotate, 2)
	a := post(t, client, url, "", strings.NewReader(fmt.Sprintf(goodBag, "third")))
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") != "1" {
		t.Fatalf("third request: status %d, Retry-After %q; want 503 and 1", a.status, a.header.Get("Retry-After"))
	}
	for _, pw := range writers {
		pw.Close()
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != http.StatusOK {
			t.Errorf("slow request: status %d", st)
		}
	}
	if a := post(t, client, url, "", strings.NewReader(fmt.Sprintf(goodBag, "fourth"))); a.status != http.StatusOK {
		t.Errorf("after the slow requests: status %d", a.status)
	}
}

// TestSlowConnectionsClosed opens 500 connections that each send one byte a
// second, half of them still in their headers, half in a body, and checks
// that the server's timeouts close every one, long before the clients
// would have finished.
func TestSlowConnectionsClosed(t *testing.T) {
	const conns = 500
	brokers := startBroker(t)
	pub := newPublisher(t, brokers, 1<<20)
	to := httpguard.Timeouts{ReadHeader: time.Second, Read: 2 * time.Second, Write: 3 * time.Second, Idle: time.Second}
	addr := serve(t, pub, HTTPConfig{MaxLineBytes: 1 << 20, Batch: 16}, to, "", "")
	const trickleFor = 60 * time.Second // what a client would take to finish
	start := time.Now()
	closedAfter := make(chan time.Duration, conns)
	var wg sync.WaitGroup
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		defer c.Close()
		var payload string
		if i%2 == 0 {
			payload = "POST /bags HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + strings.Repeat("X-Pad: y\r\n", 30)
		} else {
			// Headers at once, then a body of 1 MB announced and trickled.
			if _, err := io.WriteString(c, "POST /bags HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			payload = strings.Repeat(" ", 100)
		}
		stopWriting := make(chan struct{})
		wg.Go(func() { // one byte a second
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for j := 0; j < len(payload) && time.Since(start) < trickleFor; j++ {
				if _, err := c.Write([]byte{payload[j]}); err != nil {
					return
				}
				select {
				case <-tick.C:
				case <-stopWriting:
					return
				}
			}
		})
		wg.Go(func() { // until the server closes the connection
			defer close(stopWriting)
			_, _ = io.Copy(io.Discard, c)
			closedAfter <- time.Since(start)
		})
	}
	opened := time.Since(start)
	var longest time.Duration
	for range conns {
		select {
		case d := <-closedAfter:
			longest = max(longest, d)
		case <-time.After(trickleFor):
			t.Fatalf("connections still open after %v", trickleFor)
		}
	}
	wg.Wait()
	t.Logf("%d slow connections opened in %v, all closed by the server after at most %v (header timeout %v, read timeout %v)",
		conns, opened.Round(time.Millisecond), longest.Round(time.Millisecond), to.ReadHeader, to.Read)
}

// TestListenTLSAndAuth runs the command with --tls-cert, --tls-key and
// --auth-token-file: a client trusting the CA and holding a token
// publishes; plaintext HTTP to the TLS port is refused.
func TestListenTLSAndAuth(t *testing.T) {
	brokers := startBroker(t)
	ca := tlstest.NewCA(t, "ingest")
	srv := ca.Server(t, "ingest")
	addr := freeAddr(t)
	stdout, stderr, stop := startCommand(t, "--brokers", strings.Join(brokers, ","), "--listen", addr,
		"--tls-cert", srv.CertFile, "--tls-key", srv.KeyFile, "--auth-token-file", tokenFile(t, "s3cret-token\n"))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}, Timeout: 10 * time.Second}
	url := "https://" + addr + "/bags"
	streamtest.WaitFor(t, 10*time.Second, "ingest endpoint up", func() bool {
		resp, err := client.Get("https://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	if a := post(t, client, url, "", strings.NewReader(fmt.Sprintf(goodBag, "t0"))); a.status != http.StatusUnauthorized {
		t.Errorf("no token over TLS: status %d", a.status)
	}
	a := post(t, client, url, "s3cret-token", strings.NewReader(fmt.Sprintf(goodBag, "t1")))
	if a.status != http.StatusOK {
		t.Fatalf("token over TLS: status %d: %s", a.status, a.body)
	}
	if r := decodeResult(t, responseSchema(t), a.body); !slices.Equal(r.AcceptedIDs, []string{"t1"}) {
		t.Errorf("answer %+v", r)
	}
	if resp, err := http.Post("http://"+addr+"/bags", "application/json", strings.NewReader(fmt.Sprintf(goodBag, "t2"))); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plaintext to the TLS port: status %d", resp.StatusCode)
		}
	}
	stopPublished(t, stop, stdout, 1)
	if strings.Contains(stderr.String(), "s3cret-token") {
		t.Error("the log shows the token")
	}
}

// TestListenUsageErrors: HTTP settings that cannot work are usage errors.
func TestListenUsageErrors(t *testing.T) {
	empty := tokenFile(t, "# no token\n")
	for _, args := range [][]string{
		{"--listen", "127.0.0.1:0", "--max-message-bytes", "0", "--max-body-bytes", "0"},
		{"--listen", "127.0.0.1:0", "--max-body-bytes", "-1"},
		{"--listen", "127.0.0.1:0", "--tls-cert", "c.pem"},
		{"--jsonl", "-", "--auth-token-file", empty},
		{"--listen", "127.0.0.1:0", "--auth-token-file", empty},
		{"--listen", "127.0.0.1:0", "--auth-token-file", filepath.Join(t.TempDir(), "missing")},
	} {
		var stderr bytes.Buffer
		err := Command(context.Background(), service.Env{Stdout: io.Discard, Stderr: &stderr}, append([]string{"--brokers", "127.0.0.1:1"}, args...))
		if !errors.Is(err, cli.ErrUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// bagLines generates wire-format bag lines of about 1 KB (unlabeled, so
// they go to one topic) up to limit bytes, without holding them.
type bagLines struct {
	limit, sent int64
	n           int
	pending     []byte
}

func (g *bagLines) Read(p []byte) (int, error) {
	if g.sent >= g.limit {
		return 0, io.EOF
	}
	if len(g.pending) == 0 {
		var b strings.Builder
		fmt.Fprintf(&b, `{"schema_version":1,"id":"big-%d","dim":8,"instances":[`, g.n)
		for i := range 14 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("[0.1234567,0.2345678,0.3456789,0.4567891,0.5678912,0.6789123,0.7891234,0.8912345]")
		}
		b.WriteString("]}\n")
		g.pending = []byte(b.String())
		g.n++
	}
	n := copy(p, g.pending)
	if rest := g.limit - g.sent; int64(n) > rest {
		n = int(rest)
	}
	g.pending = g.pending[n:]
	g.sent += int64(n)
	return n, nil
}

// readStatus returns a field of /proc/PID/status in kB.
func readStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestLargeBodyBoundedMemory posts 300 MB bodies to an ingest process with
// its default limits (64 MiB a body, 1 MiB a line): announced by
// Content-Length, the body is refused with 413 before it is read; sent
// chunked, it is read and published line by line up to the limit, then
// refused with 413 saying which line to resend from. The process's peak
// resident memory (VmHWM) stays under 100 MB. The generator makes the body
// as it is sent; nothing holds it whole.
func TestLargeBodyBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 64 MiB")
	}
	const size = 300 << 20
	brokers := startBroker(t)
	addr := freeAddr(t)
	var log syncbuf.Buffer
	cmd := exec.Command(os.Args[0], "--brokers", strings.Join(brokers, ","), "--listen", addr, "--create-topics=false", "--log-level", "warn")
	cmd.Env = append(os.Environ(), roleEnv+"=ingest")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("ingest log:\n%s", log.String())
		}
	})
	streamtest.WaitFor(t, 20*time.Second, "ingest endpoint up", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	s := responseSchema(t)
	baseline := readStatus(t, cmd.Process.Pid, "VmRSS")
	url := "http://" + addr + "/bags"

	// Announced: refused before reading.
	req, _ := http.NewRequest(http.MethodPost, url, &bagLines{limit: size})
	req.ContentLength = size
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("announced 300 MB body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := decodeResult(t, s, body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || r.Complete || r.NextLine != 1 || r.Accepted != 0 {
		t.Fatalf("announced 300 MB body: status %d, %+v", resp.StatusCode, r)
	}

	// Chunked: read up to the limit, published, then refused.
	gen := &bagLines{limit: size}
	req, _ = http.NewRequest(http.MethodPost, url, io.NopCloser(gen)) // no length: chunked
	start := time.Now()
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("chunked 300 MB body: %v", err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	r = decodeResult(t, s, body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || r.Complete || r.Accepted == 0 || r.NextLine != r.Accepted+1 ||
		r.AcceptedIDs[len(r.AcceptedIDs)-1] != fmt.Sprint("big-", r.Accepted-1) || len(r.Rejected) != 0 {
		t.Fatalf("chunked 300 MB body: status %d, accepted %d, next_line %d, rejected %d, error %q",
			resp.StatusCode, r.Accepted, r.NextLine, len(r.Rejected), r.Error)
	}
	hwm := readStatus(t, cmd.Process.Pid, "VmHWM")
	t.Logf("ingest: RSS %d kB at start, peak %d kB; chunked body: %d bags (%.1f MiB) published in %v before the 64 MiB limit, client had sent %.1f MiB of 300",
		baseline, hwm, r.Accepted, float64(r.Accepted)*float64(len(firstLine()))/(1<<20), time.Since(start).Round(time.Millisecond), float64(gen.sent)/(1<<20))
	if hwm > 100*1024 {
		t.Errorf("ingest peak RSS %d kB, want < 100 MB", hwm)
	}
	if st := readStatus(t, cmd.Process.Pid, "VmRSS"); st > 100*1024 {
		t.Errorf("ingest RSS %d kB after the request, want < 100 MB", st)
	}
}

func firstLine() []byte {
	g := &bagLines{limit: 1 << 20}
	b := make([]byte, 4096)
	n, _ := g.Read(b)
	return b[:n]
}

// TestReadyzFollowsKafka cuts the connection to the broker under a running
// ingest endpoint: /readyz answers 503 naming the broker while Kafka
// cannot be reached and 200 again once it can, while /healthz (liveness)
// stays 200 throughout. The fault caught: a load balancer kept sending bags
// to an ingest that can only refuse them, or a liveness probe restarting
// it for an outage that is not its own.
func TestReadyzFollowsKafka(t *testing.T) {
	brokers := startBroker(t)
	proxy, err := streamtest.NewProxy(brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	pub := newPublisher(t, brokers, 1<<20)
	hc := HTTPConfig{MaxLineBytes: 1 << 20, Batch: 10,
		Ready: func(ctx context.Context) error {
			return kafkasec.Conn{}.Check(ctx, []string{proxy.Addr()}, time.Second)
		}}
	addr := serve(t, pub, hc, httpguard.DefaultTimeouts(), "", "")
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("broker up: /readyz %d %s", code, body)
	}
	proxy.Down()
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, proxy.Addr()) {
		t.Errorf("broker cut: /readyz %d %q, want 503 naming %s", code, body, proxy.Addr())
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("broker cut: /healthz %d, want 200", code)
	}
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Errorf("broker back: /readyz %d %s", code, body)
	}
}

// TestBagsOversizeLineDeadLettered: a line over the line limit of POST
// /bags is a dead letter as at every other door (its first bytes, size and
// SHA-256, keyed by the id those bytes show) and counted in the summary's
// rejections.
func TestBagsOversizeLineDeadLettered(t *testing.T) {
	brokers := startBroker(t)
	pub := newPublisher(t, brokers, 1<<20)
	addr := serve(t, pub, HTTPConfig{MaxLineBytes: 300, MaxBodyBytes: 1 << 20, Batch: 2}, httpguard.DefaultTimeouts(), "", "")
	long := `{"schema_version":1,"id":"long-1","dim":1,"instances":[` + strings.Repeat("[0.5],", 1000) + `[0.5]]}`
	a := post(t, http.DefaultClient, "http://"+addr+"/bags", "", strings.NewReader(fmt.Sprintf(goodBag, "ok-1")+"\n"+long+"\r\n"))
	if a.status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	if got := pub.Stats().Rejected[wire.ReasonOversize]; got != 1 {
		t.Errorf("stats: %d oversize rejections, want 1", got)
	}
	var dl wire.DeadLetter
	if err := json.Unmarshal(readTopic(t, brokers, wire.DefaultTopics().DeadLetter, 1)[0], &dl); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(long))
	if dl.Reason != wire.ReasonOversize || dl.Stage != wire.StageIngest || dl.Key != "long-1" || dl.OriginalSize != len(long) ||
		dl.OriginalSHA256 != hex.EncodeToString(sum[:]) || len(dl.Original) == 0 || !strings.HasPrefix(long, string(dl.Original)) {
		t.Fatalf("dead letter %+v (original %d bytes); want oversize at ingest, key long-1, size %d, its SHA-256, a prefix", dl, len(dl.Original), len(long))
	}
	t.Logf("dead letter: reason %s, key %s, original %d of %d bytes, error %q", dl.Reason, dl.Key, len(dl.Original), dl.OriginalSize, dl.Error)
}

// TestBagsOneJSONDocument: a body whose first line opens an object it does
// not close is one JSON document (a pretty-printed bag), published as one
// bag and reported at its first line; a body of JSON lines is still read
// line by line.
func TestBagsOneJSONDocument(t *testing.T) {
	brokers := startBroker(t)
	s := responseSchema(t)
	pub := newPublisher(t, brokers, 1<<20)
	addr := serve(t, pub, HTTPConfig{MaxLineBytes: 2000, MaxBodyBytes: 1 << 20, Batch: 2}, httpguard.DefaultTimeouts(), "", "")
	url := "http://" + addr + "/bags"
	pretty := func(id string, instances any) string {
		b, err := json.MarshalIndent(map[string]any{"schema_version": 1, "id": id, "dim": 2, "instances": instances}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	good := pretty("doc-1", [][]float64{{0.1, 0.2}, {0.3, 0.4}})
	big := pretty("doc-big", slices.Repeat([][]float64{{0.1, 0.2}}, 200))
	cases := []struct {
		name   string
		body   string
		status int
		ids    []string
		reject map[int]wire.Reason
		lines  int
	}{
		{"pretty-printed bag", good + "\n", http.StatusOK, []string{"doc-1"}, nil, strings.Count(good, "\n") + 1},
		{"after blank lines, CRLF, no final newline", "\n\n" + strings.ReplaceAll(pretty("doc-2", [][]float64{{1, 2}}), "\n", "\r\n"),
			http.StatusOK, []string{"doc-2"}, nil, strings.Count(pretty("doc-2", [][]float64{{1, 2}}), "\n") + 3},
		{"pretty-printed invalid bag", pretty("doc-nan", [][]any{{1, "NaN"}}), http.StatusUnprocessableEntity, nil,
			map[int]wire.Reason{1: wire.ReasonNonFinite}, strings.Count(pretty("doc-nan", [][]any{{1, "NaN"}}), "\n") + 1},
		{"pretty-printed bag over the line limit", big, http.StatusUnprocessableEntity, nil,
			map[int]wire.Reason{1: wire.ReasonOversize}, strings.Count(big, "\n") + 1},
		{"two documents are not one", good + "\n" + good, http.StatusUnprocessableEntity, nil,
			map[int]wire.Reason{1: wire.ReasonMalformedJSON}, 2*strings.Count(good, "\n") + 2},
		{"JSON lines", fmt.Sprintf(goodBag, "l1") + "\n" + fmt.Sprintf(goodBag, "l2") + "\n", http.StatusOK, []string{"l1", "l2"}, nil, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := post(t, http.DefaultClient, url, "", strings.NewReader(c.body))
			r := decodeResult(t, s, a.body)
			if a.status != c.status || !r.Complete || r.Lines != c.lines || !slices.Equal(r.AcceptedIDs, append([]string{}, c.ids...)) || len(r.Rejected) != len(c.reject) {
				t.Fatalf("status %d, answer %s; want %d, complete, %d lines, ids %q, rejected %v", a.status, a.body, c.status, c.lines, c.ids, c.reject)
			}
			for _, x := range r.Rejected {
				if c.reject[x.Line] != x.Reason {
					t.Errorf("rejection %+v, want %v", x, c.reject)
				}
			}
		})
	}
	// The invalid document is one dead letter, keyed by its id.
	keys := deadLetterKeys(t, brokers, wire.DefaultTopics().DeadLetter, 3)
	if !slices.Contains(keys, "doc-nan") || !slices.Contains(keys, "doc-big") {
		t.Errorf("dead-letter keys %q, want doc-nan and doc-big among them", keys)
	}
}

// TestBagsContentType: a body that says it is not JSON (the binary
// encoding, text, a form) is refused with 415 before anything is read or
// published, instead of being read as JSON line by line.
func TestBagsContentType(t *testing.T) {
	brokers := startBroker(t)
	s := responseSchema(t)
	pub := newPublisher(t, brokers, 1<<20)
	addr := serve(t, pub, HTTPConfig{MaxLineBytes: 2000, Batch: 2}, httpguard.DefaultTimeouts(), "", "")
	for _, c := range []struct {
		ct     string
		status int
	}{
		{"", http.StatusOK},
		{"application/json", http.StatusOK},
		{"application/json; charset=UTF-8", http.StatusOK},
		{"application/x-ndjson", http.StatusOK},
		{"application/x-protobuf", http.StatusUnsupportedMediaType},
		{"text/plain", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"application/json; charset=latin1", http.StatusUnsupportedMediaType},
		{"application/json;;", http.StatusUnsupportedMediaType},
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/bags", strings.NewReader(fmt.Sprintf(goodBag, "ct")))
		if c.ct != "" {
			req.Header.Set("Content-Type", c.ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r := decodeResult(t, s, body)
		if resp.StatusCode != c.status || (c.status != http.StatusOK) != (r.Error != "" && !r.Complete && r.NextLine == 1 && r.Accepted == 0) {
			t.Errorf("content type %q: status %d %s, want %d", c.ct, resp.StatusCode, body, c.status)
		}
		if c.ct == "application/x-protobuf" {
			t.Logf("%q: %d %s", c.ct, resp.StatusCode, body)
		}
	}
	if st := pub.Stats(); st.Published != 4 || len(st.Rejected) != 0 {
		t.Errorf("stats %+v, want the 4 JSON bodies published, nothing rejected", st)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
	"github.com/mimlstream/mimlstream/internal/stream/retrain"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/syncbuf"
	"github.com/mimlstream/mimlstream/internal/testsupport/tlstest"
	"github.com/mimlstream/mimlstream/schemas"
)

// runCmd runs the command in-process, as main does but for os.Exit.
func runCmd(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errb syncbuf.Buffer
	code = run(ctx, service.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}, args)
	return code, out.String(), errb.String()
}

// background runs the command until the test ends (or stop is called) and
// returns its live output and a function that stops it and returns its
// exit code.
func background(t *testing.T, args ...string) (stdout, stderr *syncbuf.Buffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &syncbuf.Buffer{}, &syncbuf.Buffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, service.Env{Stdout: stdout, Stderr: stderr}, args) }()
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(20 * time.Second):
				t.Errorf("mimlctl %q did not stop within 20 s of its signal", args)
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return stdout, stderr, stop
}

func TestHelpAndUsageErrors(t *testing.T) {
	ctx := t.Context()
	help := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"Commands:", "broker", "tail", "models", "status"}},
		{[]string{"broker", "--help"}, []string{"Usage: mimlctl broker", `--port port`, `(default "9092")`, "$MIMLSTREAM_MIMLCTL_BROKER_USER"}},
		{[]string{"tail", "--help"}, []string{"Usage: mimlctl tail TOPIC", "--follow", "--json", "--kafka-sasl-mechanism", "$MIMLSTREAM_MIMLCTL_TAIL_BROKERS"}},
		{[]string{"models", "--help"}, []string{"Actions:", "promote", "rollback", "delete", "export", "import", "$MIMLSTREAM_MIMLCTL_MODELS_REDIS"}},
		{[]string{"models", "promote", "--help"}, []string{"Usage: mimlctl models promote VERSION", "--force", "$MIMLSTREAM_MIMLCTL_MODELS_PROMOTE_FORCE", "$MIMLSTREAM_MIMLCTL_MODELS_REGISTRY_PREFIX"}},
		{[]string{"models", "export", "-h"}, []string{"--out file"}},
		{[]string{"models", "list", "--help"}, []string{"--json"}},
		{[]string{"status", "--help"}, []string{"Usage: mimlctl status", "--retrainer URL", "--group", "$MIMLSTREAM_MIMLCTL_STATUS_LISTEN"}},
	}
	for _, tc := range help {
		code, stdout, stderr := runCmd(ctx, tc.args...)
		if code != 0 {
			t.Errorf("mimlctl %q exits %d, want 0; stderr:\n%s", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout+stderr, w) {
				t.Errorf("mimlctl %q: help lacks %q:\n%s%s", tc.args, w, stdout, stderr)
			}
		}
	}
	usage := []struct {
		args []string
		want string
	}{
		{nil, "Usage: mimlctl"},
		{[]string{"frob"}, `unknown command "frob"`},
		{[]string{"models"}, "an action is required"},
		{[]string{"models", "frob"}, `unknown action "frob"`},
		{[]string{"models", "promote"}, "needs VERSION"},
		{[]string{"models", "list", "extra"}, "takes no arguments"},
		{[]string{"models", "list", "--redis", "redis://%zz"}, "--redis"},
		{[]string{"tail"}, "exactly one TOPIC"},
		{[]string{"tail", "annotations", "--brokers", "127.0.0.1:1", "--max", "-1"}, "--max -1"},
		{[]string{"tail", "annotations"}, "--brokers is required"},
		{[]string{"broker", "--user", "PLAIN:alice"}, "MECHANISM:NAME:PASSWORD"},
		{[]string{"broker", "--user", "MD5:alice:pw"}, `mechanism "MD5"`},
		{[]string{"broker", "--tls-cert", "x.pem"}, "go together"},
		{[]string{"status", "--brokers", "127.0.0.1:1", "--retrainer", "localhost:8081"}, "want an http:// or https:// URL"},
	}
	for _, tc := range usage {
		code, _, stderr := runCmd(ctx, tc.args...)
		if code != 2 {
			t.Errorf("mimlctl %q exits %d, want 2; stderr:\n%s", tc.args, code, stderr)
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("mimlctl %q: stderr lacks %q:\n%s", tc.args, tc.want, stderr)
		}
	}
	// Unreachable services are failures of the work: exit 1.
	for _, args := range [][]string{
		{"models", "list", "--redis", "127.0.0.1:1"},
		{"tail", "annotations", "--brokers", "127.0.0.1:1"},
	} {
		if code, _, stderr := runCmd(ctx, args...); code != 1 {
			t.Errorf("mimlctl %q exits %d, want 1; stderr:\n%s", args, code, stderr)
		}
	}
}

// startBroker runs `mimlctl broker` on a free port and returns its address.
func startBroker(t *testing.T, extra ...string) (addr string, stop func() int) {
	t.Helper()
	stdout, stderr, stop := background(t, append([]string{"broker", "--port", "0", "--partitions", "2"}, extra...)...)
	re := regexp.MustCompile(`broker listening on (\S+) `)
	streamtest.WaitExplained(t, 10*time.Second, 10*time.Millisecond, func() bool {
		m := re.FindStringSubmatch(stdout.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, func() string {
		return fmt.Sprintf("mimlctl broker printed no address; stdout %q stderr %q", stdout, stderr)
	})
	return addr, stop
}

func annotation(id, version string) wire.AnnotationMessage {
	return wire.AnnotationMessage{SchemaVersion: schemas.Version, BagID: id, Model: "orlr", ModelVersion: version, Mode: "inductive",
		Classes: []string{"cat", "dog", "owl"}, InstanceLabels: []int{1, 0, -1}, BagLabels: []int{0, 1}, BagScores: []float64{0.9, 0.8, 0.1},
		LatencyMS: 1.25, AnnotatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Annotator: "annotator-a"}
}

func write(t *testing.T, addr, topic string, values ...[]byte) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Key: fmt.Appendf(nil, "k%d", i), Value: v}
	}
	if err := w.WriteMessages(t.Context(), msgs...); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBrokerAndTail runs `mimlctl broker`, writes annotations and dead
// letters as the services do, and reads them back with `mimlctl tail`:
// readable, as JSON lines, and following only new messages.
func TestBrokerAndTail(t *testing.T) {
	addr, stopBroker := startBroker(t)
	topics := wire.DefaultTopics()
	// The broker's topics have the services' configuration (the fault:
	// seeded with the broker's defaults, so annotations are not compacted
	// as docs/operating.md promises).
	cl := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second}
	resp, err := cl.DescribeConfigs(t.Context(), &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: topics.Annotations, ConfigNames: []string{"cleanup.policy"}},
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: topics.DeadLetter, ConfigNames: []string{"retention.ms"}}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range resp.Resources {
		for _, e := range r.ConfigEntries {
			got[r.ResourceName+" "+e.ConfigName] = e.ConfigValue
		}
	}
	if got["annotations cleanup.policy"] != "compact" || got["dead-letters retention.ms"] != "604800000" {
		t.Errorf("topic configs %v, want annotations compacted and dead letters kept 7 days", got)
	}
	write(t, addr, topics.Annotations, mustJSON(t, annotation("bag-1", "v3")), mustJSON(t, annotation("bag-2", "v3")))
	write(t, addr, topics.DeadLetter,
		wire.NewDeadLetter(wire.StageAnnotate, wire.ReasonDimension, errors.New("bag has dimension 166, model 48"), "bag-9", topics.Annotate, 1, 17, []byte(`{"id":"bag-9"}`)).Encode(1<<20),
		wire.NewDeadLetter(wire.StageIngest, wire.ReasonMalformedJSON, errors.New("invalid character"), "", "", 0, -1, []byte(`{oops`)).Encode(1<<20))
	ctx := t.Context()

	code, stdout, stderr := runCmd(ctx, "tail", topics.Annotations, "--brokers", addr)
	if code != 0 {
		t.Fatalf("tail annotations exits %d:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("tail annotations printed %d lines, want 2:\n%s", len(lines), stdout)
	}
	for _, want := range []string{"bag-1 orlr@v3 inductive: bag {cat, dog} instances [dog cat -] 1.25ms by annotator-a", "2026-01-02T03:04:05Z"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("tail annotations lacks %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = runCmd(ctx, "tail", "--json", "--brokers", addr, topics.DeadLetter)
	if code != 0 {
		t.Fatalf("tail --json dead-letters exits %d:\n%s", code, stderr)
	}
	reasons := map[wire.Reason]bool{}
	for line := range strings.Lines(stdout) {
		var d wire.DeadLetter
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("tail --json line %q: %v", line, err)
		}
		reasons[d.Reason] = true
	}
	if len(reasons) != 2 || !reasons[wire.ReasonDimension] || !reasons[wire.ReasonMalformedJSON] {
		t.Errorf("tail --json dead letters: reasons %v, want dimension and malformed_json", reasons)
	}
	_, stdout, _ = runCmd(ctx, "tail", topics.DeadLetter, "--brokers", addr)
	for _, want := range []string{"DEAD LETTER dimension at annotate key=bag-9 from bags/p1@17: bag has dimension 166, model 48", `DEAD LETTER malformed_json at ingest`, `"{oops"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("tail dead-letters lacks %q:\n%s", want, stdout)
		}
	}

	// --follow prints only what is written after it started.
	out, errOut, stopTail := background(t, "tail", topics.Annotations, "--follow", "--brokers", addr)
	written := 0
	streamtest.WaitExplained(t, 15*time.Second, 100*time.Millisecond, func() bool {
		if strings.Contains(out.String(), "bag-new") {
			return true
		}
		write(t, addr, topics.Annotations, mustJSON(t, annotation(fmt.Sprintf("bag-new-%d", written), "v4")))
		written++
		return false
	}, func() string {
		return fmt.Sprintf("tail --follow printed nothing new; stdout %q stderr %q", out, errOut)
	})
	if code := stopTail(); code != 0 {
		t.Errorf("tail --follow exits %d after its signal, want 0; stderr:\n%s", code, errOut)
	}
	if strings.Contains(out.String(), "bag-1") {
		t.Errorf("tail --follow printed an old message:\n%s", out)
	}

	// --max stops after that many messages.
	_, stdout, _ = runCmd(ctx, "tail", topics.Annotations, "--brokers", addr, "--max", "1")
	if n := strings.Count(stdout, "\n"); n != 1 {
		t.Errorf("tail --max 1 printed %d lines:\n%s", n, stdout)
	}
	if code := stopBroker(); code != 0 {
		t.Errorf("broker exits %d after its signal, want 0", code)
	}
}

// TestBrokerSecurity runs the broker TLS-only with a SCRAM user: tail
// connects with the services' security flags, and a wrong password exits 1
// with a message that says so.
func TestBrokerSecurity(t *testing.T) {
	ca := tlstest.NewCA(t, "broker")
	srv := ca.Server(t, "broker")
	addr, _ := startBroker(t, "--tls-cert", srv.CertFile, "--tls-key", srv.KeyFile, "--user", "SCRAM-SHA-512:alice:s3cret")
	secure := []string{"--brokers", addr, "--kafka-tls-ca", ca.File, "--kafka-sasl-mechanism", "scram-sha-512", "--kafka-sasl-user", "alice"}
	ctx := t.Context()
	if code, _, stderr := runCmd(ctx, append([]string{"tail", "bags", "--kafka-sasl-password", "s3cret"}, secure...)...); code != 0 {
		t.Errorf("tail over TLS+SCRAM exits %d:\n%s", code, stderr)
	}
	code, _, stderr := runCmd(ctx, append([]string{"tail", "bags", "--kafka-sasl-password", "wrong"}, secure...)...)
	if code != 1 || !strings.Contains(stderr, "authentication") {
		t.Errorf("tail with a wrong password exits %d, want 1 with an authentication error:\n%s", code, stderr)
	}
	if strings.Contains(stderr, "wrong") && strings.Contains(stderr, "password wrong") {
		t.Errorf("the password appears in the error:\n%s", stderr)
	}
	if code, _, stderr := runCmd(ctx, "tail", "bags", "--brokers", addr); code != 1 {
		t.Errorf("plaintext tail against a TLS broker exits %d, want 1:\n%s", code, stderr)
	}
}

// registryEnv is one test's key space in the real Redis.
type registryEnv struct {
	prefix string
	rdb    redis.UniversalClient
	reg    *featurestore.Registry
	flags  []string
}

func newRegistryEnv(t *testing.T) *registryEnv {
	t.Helper()
	redisAddr := redistest.Real(t)
	rdb, err := redisflag.Dial(t.Context(), redisflag.Options{Addr: redisAddr})
	if err != nil {
		t.Fatalf("Redis at %s answered PING but Connect failed: %v", redisAddr, err)
	}
	prefix := fmt.Sprintf("mimlctl-%s-%d", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() {
		streamtest.DeleteKeys(context.Background(), rdb, "{"+prefix+"*")
		rdb.Close()
	})
	return &registryEnv{prefix: prefix, rdb: rdb, reg: featurestore.NewRegistry(rdb, prefix),
		flags: []string{"--redis", redisAddr, "--registry-prefix", prefix}}
}

// fit runs `retrainer fit`, as an operator would, and returns the version.
func (r *registryEnv) fit(t *testing.T, data, kind string, promote bool) featurestore.VersionMeta {
	t.Helper()
	args := append([]string{"--data", data, "--model", kind}, r.flags...)
	if promote {
		args = append(args, "--promote")
	}
	var out, errb bytes.Buffer
	if err := retrain.FitCommand(t.Context(), service.Env{Stdout: &out, Stderr: &errb}, catalog.New(), args); err != nil {
		t.Fatalf("retrainer fit %q: %v\n%s", args, err, errb.String())
	}
	var meta featurestore.VersionMeta
	if err := json.Unmarshal(out.Bytes(), &meta); err != nil {
		t.Fatalf("retrainer fit output: %v\n%s", err, out.String())
	}
	return meta
}

func (r *registryEnv) current(t *testing.T) string {
	t.Helper()
	v, err := r.reg.Alias(t.Context(), featurestore.AliasCurrent)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestModels drives every models action against the real Redis, with
// models fitted by `retrainer fit`: the musk1 model (dimension 166) cannot
// be promoted over the MSCV2 one (dimension 48, 23 classes) without
// --force, and rollback restores the MSCV2 one.
func TestModels(t *testing.T) {
	r := newRegistryEnv(t)
	ctx := t.Context()
	models := func(args ...string) (int, string, string) {
		return runCmd(ctx, append(append([]string{"models"}, args...), r.flags...)...)
	}
	if code, stdout, _ := models("list"); code != 0 || !strings.Contains(stdout, "no model versions") {
		t.Errorf("list of an empty registry: exit %d, %q", code, stdout)
	}
	mscv2 := r.fit(t, "../../testdata/mscv2/MSCV2.mat", "dummy", true)
	musk1 := r.fit(t, "../../testdata/musk1/musk1.data", "dummy", false)
	if mscv2.Dim != 48 || musk1.Dim != 166 {
		t.Fatalf("fitted dims %d and %d, want 48 and 166", mscv2.Dim, musk1.Dim)
	}

	code, stdout, stderr := models("list", "--json")
	if code != 0 {
		t.Fatalf("list --json exits %d:\n%s", code, stderr)
	}
	var listed []struct {
		featurestore.VersionMeta
		Aliases []string `json:"aliases"`
	}
	if err := json.Unmarshal([]byte(stdout), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0].Version != mscv2.Version || listed[0].Dim != 48 || len(listed[0].Classes) != 23 ||
		strings.Join(listed[0].Aliases, ",") != "current" || listed[1].Dim != 166 || len(listed[1].Aliases) != 0 {
		t.Errorf("list --json = %+v", listed)
	}
	_, stdout, _ = models("list")
	if !regexp.MustCompile(`(?m)^` + mscv2.Version + `\s+current\s+dummy\s+48\s+23\s`).MatchString(stdout) {
		t.Errorf("list does not show %s as current dummy, dim 48, 23 classes:\n%s", mscv2.Version, stdout)
	}

	code, stdout, stderr = models("show", "current", "--json")
	var shown struct {
		Version  string   `json:"version"`
		Verified bool     `json:"verified"`
		Aliases  []string `json:"aliases"`
	}
	if err := json.Unmarshal([]byte(stdout), &shown); code != 0 || err != nil || shown.Version != mscv2.Version || !shown.Verified {
		t.Errorf("show current --json: exit %d, %+v, %v; stderr %s", code, shown, err, stderr)
	}
	_, stdout, _ = models("show", musk1.Version)
	if !strings.Contains(stdout, "input dimension  166") || !strings.Contains(stdout, "(verified, decodes)") {
		t.Errorf("show %s:\n%s", musk1.Version, stdout)
	}

	// The guard: refused, current unchanged.
	code, _, stderr = models("promote", musk1.Version)
	if code != 1 {
		t.Errorf("promote of the musk1 model over MSCV2 exits %d, want 1", code)
	}
	for _, want := range []string{"promotion refused", musk1.Version + " has input dimension 166, " + mscv2.Version + " has 48", "classes 1", "--force"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("refusal lacks %q:\n%s", want, stderr)
		}
	}
	if cur := r.current(t); cur != mscv2.Version {
		t.Fatalf("after a refused promotion current is %s, want %s", cur, mscv2.Version)
	}

	// --force promotes and says so; rollback restores the MSCV2 model.
	code, stdout, stderr = models("promote", musk1.Version, "--force", "--json")
	var p struct {
		Current, Previous, Incompatible string
		Forced                          bool
	}
	if err := json.Unmarshal([]byte(stdout), &p); code != 0 || err != nil || !p.Forced || p.Current != musk1.Version || p.Previous != mscv2.Version {
		t.Fatalf("promote --force: exit %d, %+v, %v; stderr %s", code, p, err, stderr)
	}
	if !strings.Contains(stderr, "WARNING: forced") {
		t.Errorf("promote --force does not warn:\n%s", stderr)
	}
	if cur := r.current(t); cur != musk1.Version {
		t.Fatalf("after promote --force current is %s", cur)
	}
	code, stdout, _ = models("rollback")
	if code != 0 || !strings.Contains(stdout, "rolled back to "+mscv2.Version+" (was "+musk1.Version+")") {
		t.Errorf("rollback: exit %d, %q", code, stdout)
	}
	if cur := r.current(t); cur != mscv2.Version {
		t.Fatalf("after rollback current is %s, want %s", cur, mscv2.Version)
	}
	if code, _, stderr := models("rollback"); code != 1 || !strings.Contains(stderr, "no previous version") {
		t.Errorf("rollback with no history: exit %d, %s", code, stderr)
	}
	// A compatible version promotes without --force.
	again := r.fit(t, "../../testdata/mscv2/MSCV2.mat", "dummy", false)
	if code, stdout, stderr := models("promote", again.Version); code != 0 || !strings.Contains(stdout, "promoted "+again.Version+" (was "+mscv2.Version+")") {
		t.Errorf("promote of a compatible version: exit %d, %q, %s", code, stdout, stderr)
	}
	if code, _, stderr := models("promote", "v999"); code != 1 || !strings.Contains(stderr, "not found") {
		t.Errorf("promote of a missing version: exit %d, %s", code, stderr)
	}

	// Export, then import: a new version with the same bytes.
	dir := t.TempDir()
	file := filepath.Join(dir, "mscv2.json")
	if code, stdout, stderr := models("export", mscv2.Version, "--out", file); code != 0 || !strings.Contains(stdout, mscv2.Checksum) {
		t.Fatalf("export: exit %d, %q, %s", code, stdout, stderr)
	}
	code, stdout, stderr = models("import", file, "--json")
	var imp struct {
		featurestore.VersionMeta
		From string `json:"imported_from"`
	}
	if err := json.Unmarshal([]byte(stdout), &imp); code != 0 || err != nil {
		t.Fatalf("import: exit %d, %v; stderr %s", code, err, stderr)
	}
	if imp.From != mscv2.Version || imp.Checksum != mscv2.Checksum || imp.Version == mscv2.Version || imp.TrainingWindow != mscv2.TrainingWindow {
		t.Errorf("import = %+v, want a new version of %s's blob and window", imp, mscv2.Version)
	}
	if _, _, err := r.reg.Get(ctx, imp.Version); err != nil {
		t.Errorf("imported version does not verify: %v", err)
	}
	// Export to standard output, import from standard input is the same
	// document.
	_, exported, _ := models("export", mscv2.Version)
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(exported), &doc); err != nil || string(doc["format"]) != `"mimlstream.model-export/v1"` {
		t.Errorf("export to stdout: %v, format %s", err, doc["format"])
	}

	// Import refuses what it cannot verify.
	tampered := tamper(t, file)
	notAModel := filepath.Join(dir, "not-a-model.json")
	if err := os.WriteFile(notAModel, []byte(`{"kind":"nope","classes":["a"],"dim":2,"state":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{tampered, "corrupt"},
		{notAModel, "does not decode"},
		{garbage, "not JSON"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		code, _, stderr := models("import", tc.file)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("import %s: exit %d, want 1 with %q:\n%s", filepath.Base(tc.file), code, tc.want, stderr)
		}
	}
	n, err := r.reg.List(ctx)
	if err != nil || len(n) != 4 {
		t.Errorf("after the refused imports the registry holds %d versions (%v), want 4", len(n), err)
	}

	// Candidate: a compatible version runs in shadow; musk1 (dimension
	// 166) cannot; promote candidate promotes it and clears the alias.
	if code, _, stderr := models("candidate", musk1.Version); code != 1 || !strings.Contains(stderr, "cannot run in shadow") {
		t.Errorf("candidate of the musk1 model: exit %d, %s", code, stderr)
	}
	code, stdout, stderr = models("candidate", imp.Version, "--json")
	if code != 0 || !strings.Contains(stdout, `"candidate": "`+imp.Version+`"`) {
		t.Errorf("candidate %s: exit %d, %q, %s", imp.Version, code, stdout, stderr)
	}
	if _, stdout, _ = models("list"); !regexp.MustCompile(`(?m)^` + imp.Version + `\s+candidate\s`).MatchString(stdout) {
		t.Errorf("list does not show %s as the candidate:\n%s", imp.Version, stdout)
	}
	if code, stdout, stderr := models("promote", "candidate"); code != 0 || !strings.Contains(stdout, "promoted "+imp.Version) {
		t.Errorf("promote candidate: exit %d, %q, %s", code, stdout, stderr)
	}
	if _, err := r.reg.Alias(ctx, featurestore.AliasCandidate); !errors.Is(err, featurestore.ErrNotFound) {
		t.Errorf("candidate alias still set after its promotion: %v", err)
	}
	if code, _, _ := models("rollback"); code != 0 {
		t.Fatal("rollback after promoting the candidate failed")
	}

	// Delete: never current; previous only with --force; by version id
	// only. Here again is current, mscv2 previous, musk1 and the import
	// unreferenced.
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{again.Version}, 1, "is current"},
		{[]string{again.Version, "--force"}, 1, "is current"},
		{[]string{mscv2.Version}, 1, "is previous; --force deletes it anyway"},
		{[]string{"current"}, 2, "not the alias"},
		{nil, 2, "needs VERSION"},
		{[]string{"v999"}, 1, "not found"},
	} {
		code, stdout, stderr := models(append([]string{"delete"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("delete %q: exit %d, want %d with %q:\n%s%s", tc.args, code, tc.code, tc.want, stdout, stderr)
		}
	}
	if code, stdout, stderr := models("delete", musk1.Version); code != 0 || strings.TrimSpace(stdout) != "deleted "+musk1.Version {
		t.Errorf("delete %s: exit %d, %q, %s", musk1.Version, code, stdout, stderr)
	}
	if code, _, stderr := models("delete", musk1.Version); code != 1 || !strings.Contains(stderr, "not found") {
		t.Errorf("delete of a deleted version: exit %d, %s", code, stderr)
	}
	code, stdout, stderr = models("delete", mscv2.Version, "--force", "--json")
	var del struct {
		Deleted string   `json:"deleted"`
		Aliases []string `json:"aliases"`
	}
	if err := json.Unmarshal([]byte(stdout), &del); code != 0 || err != nil || del.Deleted != mscv2.Version || !slices.Equal(del.Aliases, []string{"previous"}) {
		t.Errorf("delete --force --json of previous: exit %d, %+v, %v; stderr %s", code, del, err, stderr)
	}
	if _, err := r.reg.Alias(ctx, featurestore.AliasPrevious); !errors.Is(err, featurestore.ErrNotFound) {
		t.Errorf("previous still set after its version was deleted: %v", err)
	}
	if code, _, stderr := models("rollback"); code != 1 || !strings.Contains(stderr, "no previous version") {
		t.Errorf("rollback after deleting the only previous version: exit %d, %s", code, stderr)
	}
	if n, err := r.reg.List(ctx); err != nil || len(n) != 2 || r.current(t) != again.Version {
		t.Errorf("after the deletes: %d versions (%v), current %s; want 2 with %s current", len(n), err, r.current(t), again.Version)
	}
}

// tamper flips one byte of the model inside an export file, keeping it a
// valid document.
func tamper(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	blob, ok := doc["blob"].(string)
	if !ok || len(blob) < 10 {
		t.Fatalf("export has no blob: %s", b)
	}
	// Base64 of the JSON envelope: changing a letter changes the bytes.
	r := []byte(blob)
	if r[8] == 'A' {
		r[8] = 'B'
	} else {
		r[8] = 'A'
	}
	doc["blob"] = string(r)
	out := filepath.Join(t.TempDir(), "tampered.json")
	if err := os.WriteFile(out, mustJSON(t, doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStatus runs `mimlctl status` against `mimlctl broker` and the real
// Redis: the JSON shows the registry's versions, the consumer group's lag
// per partition and the dead letters by reason; the plots are SVG; the
// lag is exported for Prometheus.
func TestStatus(t *testing.T) {
	r := newRegistryEnv(t)
	v := r.fit(t, "../../testdata/musk1/musk1.data", "dummy", true)
	addr, _ := startBroker(t)
	topics := wire.DefaultTopics()
	bags := make([][]byte, 5)
	for i := range bags {
		bags[i] = fmt.Appendf(nil, `{"schema_version":1,"id":"b%d","dim":2,"instances":[[0,1]]}`, i)
	}
	write(t, addr, topics.Annotate, bags...)
	write(t, addr, topics.DeadLetter,
		wire.NewDeadLetter(wire.StageAnnotate, wire.ReasonDimension, errors.New("dim"), "b1", topics.Annotate, 0, 1, nil).Encode(1<<20),
		wire.NewDeadLetter(wire.StageAnnotate, wire.ReasonDimension, errors.New("dim"), "b2", topics.Annotate, 0, 2, nil).Encode(1<<20),
		wire.NewDeadLetter(wire.StageIngest, wire.ReasonSchema, errors.New("schema"), "", "", 0, -1, nil).Encode(1<<20),
		[]byte(`{"reason":"made-up-by-someone","stage":"elsewhere"}`))

	listen := freeAddr(t)
	base := "http://" + listen
	_, stderr, stop := background(t, append([]string{"status", "--brokers", addr, "--listen", listen, "--interval", "100ms", "--group", "annotators"}, r.flags...)...)
	var snap struct {
		Seq    int64 `json:"seq"`
		Models []struct {
			Version string   `json:"version"`
			Aliases []string `json:"aliases"`
			Dim     int      `json:"dim"`
		} `json:"models"`
		Current     string `json:"current"`
		LagTotal    int64  `json:"lag_total"`
		DeadLetters struct {
			Total    int64            `json:"total"`
			ByReason map[string]int64 `json:"by_reason"`
		} `json:"dead_letters"`
		Errors map[string]string `json:"errors"`
	}
	streamtest.WaitExplained(t, 20*time.Second, 50*time.Millisecond, func() bool {
		code, body := get(t, base+"/api/status")
		if code != 200 {
			return false
		}
		if err := json.Unmarshal([]byte(body), &snap); err != nil {
			t.Fatal(err)
		}
		return snap.Seq > 0 && snap.DeadLetters.Total == 4 && snap.LagTotal == 5
	}, func() string {
		return fmt.Sprintf("status never showed 4 dead letters and lag 5: last %+v; stderr:\n%s", snap, stderr)
	})
	if len(snap.Models) != 1 || snap.Models[0].Version != v.Version || snap.Current != v.Version || snap.Models[0].Dim != 166 {
		t.Errorf("status models %+v current %q, want %s current", snap.Models, snap.Current, v.Version)
	}
	if want := map[string]int64{"dimension": 2, "schema": 1, "other": 1}; fmt.Sprint(snap.DeadLetters.ByReason) != fmt.Sprint(want) {
		t.Errorf("dead letters by reason %v, want %v", snap.DeadLetters.ByReason, want)
	}
	if len(snap.Errors) != 0 {
		t.Errorf("status errors: %v", snap.Errors)
	}
	for _, p := range []string{"models", "throughput", "lag", "dead-letters", "refits"} {
		code, body := get(t, base+"/plots/"+p+".svg")
		if code != 200 || !strings.HasPrefix(strings.TrimSpace(body), "<?xml") || !strings.Contains(body, "<svg") {
			t.Errorf("plot %s: %d, %.80q", p, code, body)
		}
	}
	if _, body := get(t, base+"/plots/models.svg"); !strings.Contains(body, v.Version+" dummy d166 [current]") {
		t.Errorf("models plot does not label %s", v.Version)
	}
	if code, _ := get(t, base+"/plots/nope.svg"); code != 404 {
		t.Errorf("unknown plot: %d, want 404", code)
	}
	if code, body := get(t, base+"/"); code != 200 || !strings.Contains(body, "mimlstream status") {
		t.Errorf("page: %d", code)
	}
	if code, _ := get(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz: %d", code)
	}
	_, metrics := get(t, base+"/metrics")
	total := 0
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, `mimlstream_consumer_group_lag_messages{group="annotators",partition=`) {
			var n int
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &n)
			total += n
		}
	}
	if total != 5 || !strings.Contains(metrics, `mimlstream_registry_versions 1`) || !strings.Contains(metrics, `mimlstream_status_source_up{source="kafka"} 1`) {
		t.Errorf("/metrics: lag sum %d, want 5:\n%s", total, metrics)
	}
	if code := stop(); code != 0 {
		t.Errorf("status exits %d after its signal:\n%s", code, stderr)
	}
}

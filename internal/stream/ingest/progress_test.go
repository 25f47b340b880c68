package ingest

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/syncbuf"
	"github.com/mimlstream/mimlstream/internal/testsupport/tlstest"
)

// TestProgressFirstTickRate: the bar's clock starts when the bar is made
// (publishing starts), so its first tick shows the rate since then, not
// the count over the microseconds since the tick before it.
func TestProgressFirstTickRate(t *testing.T) {
	var stderr syncbuf.Buffer
	bar := newBar(service.Env{Stderr: &stderr}, true, 10000, "publishing")
	time.Sleep(100 * time.Millisecond)
	_ = bar.Set(1000) // at most 1000 / 0.1 s = 10,000 bags/s
	m := regexp.MustCompile(`([0-9.]+) bags/s`).FindAllStringSubmatch(stderr.String(), -1)
	if len(m) == 0 {
		t.Fatalf("no rate shown: %q", stderr.String())
	}
	rate, err := strconv.ParseFloat(m[len(m)-1][1], 64)
	if err != nil || rate > 10000 {
		t.Fatalf("first tick shows %v bags/s (%v), want at most 10,000: %q", rate, err, stderr.String())
	}
	t.Logf("first tick: %s bags/s", m[len(m)-1][1])
}

// TestUnreadableSourceIsTheErrorAlone: `ingest --data nope.mat` fails with
// the error, without a "published 0 bags" summary before it.
func TestUnreadableSourceIsTheErrorAlone(t *testing.T) {
	brokers := startBroker(t)
	var stdout, stderr syncbuf.Buffer
	err := Command(t.Context(), service.Env{Stdout: &stdout, Stderr: &stderr}, []string{"--brokers", brokers[0], "--data", "nope.mat", "--create-topics=false"})
	if err == nil || stdout.String() != "" {
		t.Fatalf("err %v, stdout %q; want the error alone", err, stdout.String())
	}
	t.Logf("error: %v", err)
}

// TestHTTPErrorsThroughSlog: net/http's own lines (plain HTTP sent to the
// TLS endpoint) reach the service's structured log, not the standard log
// package's stderr.
func TestHTTPErrorsThroughSlog(t *testing.T) {
	brokers := startBroker(t)
	ca := tlstest.NewCA(t, "ingest")
	srv := ca.Server(t, "ingest")
	addr := freeAddr(t)
	_, stderr, stop := startCommand(t, "--brokers", brokers[0], "--listen", addr, "--tls-cert", srv.CertFile, "--tls-key", srv.KeyFile)
	streamtest.WaitFor(t, 10*time.Second, "a TLS handshake error logged", func() bool {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
		}
		return strings.Contains(stderr.String(), "TLS handshake error")
	})
	if !regexp.MustCompile(`level=WARN msg="http: TLS handshake error`).MatchString(stderr.String()) {
		t.Errorf("the handshake error is not a structured WARN line:\n%s", stderr.String())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/embedded/broker"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/testsupport/tlstest"
)

const (
	scramUser     = "mimlstream"
	scramPassword = "e2e-scram-512-secret"
)

// secureBroker starts the embedded broker with a TLS-only listener signed by
// ca and SCRAM-SHA-512 authentication for one user.
func secureBroker(t *testing.T, ca *tlstest.CA, topics []string) []string {
	t.Helper()
	srv := ca.Server(t, "broker")
	b, err := broker.Start(broker.Options{Partitions: 4, Topics: topics,
		TLS:   &tls.Config{Certificates: []tls.Certificate{srv.TLS}, MinVersion: tls.VersionTLS12},
		Users: []broker.User{{Mechanism: "SCRAM-SHA-512", Name: scramUser, Password: scramPassword}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b.Addrs()
}

func writeSecret(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kafka-password")
	if err := os.WriteFile(p, []byte(s+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEndToEndTLSSCRAM runs the pipeline over TLS with SCRAM-SHA-512: the
// publisher, two annotator processes (given the password by file) and the
// tail all authenticate; every bag is annotated.
func TestEndToEndTLSSCRAM(t *testing.T) {
	e := newEnv(t)
	ca := tlstest.NewCA(t, "kafka")
	e.brokers = secureBroker(t, ca, e.topics.All())
	cfg := kafkasec.Config{CAFile: ca.File, Mechanism: "scram-sha-512", User: scramUser, PasswordFile: writeSecret(t, scramPassword)}
	sec, err := cfg.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	e.sec = sec
	e.secArgs = []string{"--kafka-tls-ca", ca.File, "--kafka-sasl-mechanism", "scram-sha-512", "--kafka-sasl-user", scramUser, "--kafka-sasl-password-file", cfg.PasswordFile}

	ds, blob := mscv2Model(t)
	version := e.promote(blob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := e.tail(ctx)
	a1 := e.startAnnotator("a1", annotatorOpts{})
	e.startAnnotator("a2", annotatorOpts{})
	bags := ds.Bags[:200]
	if rej, err := e.publisher(0.5).PublishDataset(ctx, ds, bags); err != nil || len(rej) > 0 {
		t.Fatalf("publish over TLS+SCRAM: %v %v", rej, err)
	}
	out.waitIDs(t, len(bags), 90*time.Second)
	out.mu.Lock()
	defer out.mu.Unlock()
	for id, as := range out.anns {
		if as[0].ModelVersion != version {
			t.Errorf("bag %s annotated by %s", id, as[0].ModelVersion)
		}
	}
	if strings.Contains(a1.logText(), scramPassword) {
		t.Error("the annotator logged the SASL password")
	}
}

// TestKafkaSecurityFailuresExit: a wrong password, an untrusted CA and a
// plaintext client against the TLS listener each stop the annotator command
// at start, within seconds, with exit code 1 and a message that says what is
// wrong (and never the password).
func TestKafkaSecurityFailuresExit(t *testing.T) {
	e := newEnv(t)
	ca := tlstest.NewCA(t, "kafka")
	other := tlstest.NewCA(t, "other")
	e.brokers = secureBroker(t, ca, e.topics.All())
	wrong := writeSecret(t, "not-the-password")
	right := writeSecret(t, scramPassword)
	cases := []securityCase{
		{"wrong password", []string{"--kafka-tls-ca", ca.File, "--kafka-sasl-mechanism", "scram-sha-512", "--kafka-sasl-user", scramUser, "--kafka-sasl-password-file", wrong}, "SASL authentication failed"},
		{"untrusted CA", []string{"--kafka-tls-ca", other.File, "--kafka-sasl-mechanism", "scram-sha-512", "--kafka-sasl-user", scramUser, "--kafka-sasl-password-file", right}, "not signed by a trusted CA"},
		{"plaintext client against TLS listener", []string{"--kafka-sasl-mechanism", "scram-sha-512", "--kafka-sasl-user", scramUser, "--kafka-sasl-password-file", right}, "is its listener TLS"},
	}
	e.refusedAtStart(t, cases, 15*time.Second)
}

// securityCase is an annotator started with args that must stop at start
// with exit code 1 and a message holding want.
type securityCase struct {
	name string
	args []string
	want string
}

// refusedAtStart starts an annotator per case (without the env's own
// security flags) and checks that each exits 1 within limit, naming the
// cause and no password.
func (e *env) refusedAtStart(t *testing.T, cases []securityCase, limit time.Duration) {
	t.Helper()
	own := e.secArgs
	e.secArgs = nil
	defer func() { e.secArgs = own }()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			a := e.startAnnotator("bad", annotatorOpts{extra: tc.args})
			select {
			case <-a.done:
			case <-time.After(limit):
				t.Fatalf("annotator still running after %v; log:\n%s", limit, a.logText())
			}
			var exit *exec.ExitError
			if !errors.As(a.err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit %v, want code 1; log:\n%s", a.err, a.logText())
			}
			log := a.logText()
			if !strings.Contains(log, tc.want) {
				t.Fatalf("log lacks %q:\n%s", tc.want, log)
			}
			if strings.Contains(log, scramPassword) || strings.Contains(log, "not-the-password") {
				t.Fatalf("log holds a password:\n%s", log)
			}
			t.Logf("exit 1 after %v: %s", time.Since(start).Round(time.Millisecond), lastLine(log))
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

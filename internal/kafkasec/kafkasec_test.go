package kafkasec

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/mimlstream/mimlstream/internal/testsupport/tlstest"
)

// secureBroker starts kfake with a TLS listener signed by ca and SCRAM users.
func secureBroker(t *testing.T, ca *tlstest.CA, withTLS bool) []string {
	t.Helper()
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }),
		kfake.SeedTopics(1, "secured"),
		kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "svc", "s3cret-512"),
		kfake.Superuser("SCRAM-SHA-256", "svc256", "s3cret-256"),
		kfake.Superuser("PLAIN", "plainuser", "plain-pw"),
	}
	if withTLS {
		srv := ca.Server(t, "broker")
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{srv.TLS}, MinVersion: tls.VersionTLS12}))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func TestCheckAgainstSecuredBroker(t *testing.T) {
	ca := tlstest.NewCA(t, "kafka")
	other := tlstest.NewCA(t, "other")
	brokers := secureBroker(t, ca, true)
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret-512\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		cfg     Config
		wantErr string // empty: must succeed
	}{
		{"tls+scram-512", Config{CAFile: ca.File, Mechanism: "scram-sha-512", User: "svc", Password: "s3cret-512"}, ""},
		{"tls+scram-512 password file", Config{TLS: true, CAFile: ca.File, Mechanism: "scram-sha-512", User: "svc", PasswordFile: pwFile}, ""},
		{"tls+scram-256", Config{CAFile: ca.File, Mechanism: "scram-sha-256", User: "svc256", Password: "s3cret-256"}, ""},
		{"tls+plain", Config{CAFile: ca.File, Mechanism: "plain", User: "plainuser", Password: "plain-pw"}, ""},
		{"insecure skips verification", Config{Insecure: true, Mechanism: "scram-sha-512", User: "svc", Password: "s3cret-512"}, ""},
		{"wrong password", Config{CAFile: ca.File, Mechanism: "scram-sha-512", User: "svc", Password: "wrong"}, "SASL authentication failed"},
		{"wrong mechanism for user", Config{CAFile: ca.File, Mechanism: "scram-sha-256", User: "svc", Password: "s3cret-512"}, "SASL authentication failed"},
		{"untrusted CA", Config{CAFile: other.File, Mechanism: "scram-sha-512", User: "svc", Password: "s3cret-512"}, "not signed by a trusted CA"},
		{"system pool does not know the test CA", Config{TLS: true, Mechanism: "scram-sha-512", User: "svc", Password: "s3cret-512"}, "not signed by a trusted CA"},
		{"wrong server name", Config{CAFile: ca.File, ServerName: "kafka.example.com", Mechanism: "scram-sha-512", User: "svc", Password: "s3cret-512"}, "does not name this host"},
		{"plaintext client against TLS listener", Config{Mechanism: "scram-sha-512", User: "svc", Password: "s3cret-512"}, "is its listener TLS"},
		{"plaintext, no SASL, against TLS listener", Config{}, "is its listener TLS"},
		{"no SASL against SASL broker", Config{CAFile: ca.File}, "require SASL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := tc.cfg.Resolve()
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			start := time.Now()
			err = conn.Check(context.Background(), brokers, 5*time.Second)
			took := time.Since(start)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("check: %v", err)
				}
				produceConsume(t, conn, brokers)
				return
			}
			if err == nil {
				t.Fatalf("check succeeded, want error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error leaks the password: %v", err)
			}
			t.Logf("%s after %v", err, took.Round(time.Millisecond))
		})
	}
}

// TestNoSASLBrokerRejectsAuthlessClient: a SASL-only broker must not serve a
// client that skips authentication; whatever kfake answers, a produce must
// fail rather than land.
func TestNoSASLBrokerRejectsAuthlessClient(t *testing.T) {
	ca := tlstest.NewCA(t, "kafka")
	brokers := secureBroker(t, ca, false)
	conn, err := Config{}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "secured", Transport: conn.Transport(), RequiredAcks: kafka.RequireAll, MaxAttempts: 1}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("x")}); err == nil {
		t.Fatal("an unauthenticated client produced to a SASL broker")
	}
}

func produceConsume(t *testing.T, conn Conn, brokers []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "secured", Transport: conn.Transport(), RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	val := []byte("over " + t.Name())
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: val}); err != nil {
		t.Fatalf("produce: %v", err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: "secured", Partition: 0, Dialer: conn.Dialer(), MaxWait: 50 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("consume: %v", err)
		}
		if bytes.Equal(m.Value, val) {
			return
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"plaintext", Config{}, ""},
		{"cert without key", Config{CertFile: "c.pem"}, "go together"},
		{"unknown mechanism", Config{Mechanism: "gssapi", User: "u"}, "unknown mechanism"},
		{"no user", Config{Mechanism: "plain"}, "--kafka-sasl-user is required"},
		{"password without mechanism", Config{Password: "p"}, "--kafka-sasl-mechanism is not"},
		{"password twice", Config{Mechanism: "plain", User: "u", Password: "p", PasswordFile: "f"}, "give the password once"},
		{"upper-case mechanism", Config{Mechanism: "SCRAM-SHA-512", User: "u", Password: "p"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want error containing %q", err, tc.want)
			}
		})
	}
}

// TestSecretsNeverPrinted: logging the configuration, printing it, or a
// failed resolution never shows the password.
func TestSecretsNeverPrinted(t *testing.T) {
	cfg := Config{Mechanism: "scram-sha-512", User: "svc", Password: "hunter2-secret"}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("connecting", "kafka", cfg)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("connecting", "kafka", cfg)
	buf.WriteString(cfg.String())
	if strings.Contains(buf.String(), "hunter2") {
		t.Fatalf("secret in output: %s", buf.String())
	}
	if !strings.Contains(buf.String(), "svc") {
		t.Fatalf("log lacks the user: %s", buf.String())
	}
}

func TestFlagsRegistered(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	for _, name := range []string{"kafka-tls", "kafka-tls-ca", "kafka-tls-cert", "kafka-tls-key", "kafka-tls-insecure", "kafka-sasl-mechanism", "kafka-sasl-user", "kafka-sasl-password", "kafka-sasl-password-file"} {
		if fs.Lookup(name) == nil {
			t.Errorf("flag --%s missing", name)
		}
	}
	if err := fs.Parse([]string{"--kafka-tls-ca", "/ca.pem", "--kafka-sasl-mechanism", "plain"}); err != nil {
		t.Fatal(err)
	}
	if !c.tlsOn() || c.CAFile != "/ca.pem" || c.Mechanism != "plain" {
		t.Fatalf("parsed %+v", c)
	}
}

// Package kafkasec holds how the services secure their Kafka connections:
// TLS (CA, client certificate, server name) and SASL (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512). Every command registers the same flags through it, so an
// operator's scripts use one set of names, and it checks the connection once
// at start so that a wrong password or an untrusted certificate fails fast
// with a clear message instead of disappearing into kafka-go's retry loops.
package kafkasec

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// SASL mechanism names as given on the command line.
const (
	MechanismPlain  = "plain"
	MechanismSHA256 = "scram-sha-256"
	MechanismSHA512 = "scram-sha-512"
)

// Config is the security of a Kafka connection. The zero value is plaintext
// without authentication (the embedded development broker).
type Config struct {
	TLS          bool
	CAFile       string
	CertFile     string
	KeyFile      string
	ServerName   string
	Insecure     bool
	Mechanism    string
	User         string
	Password     string //nolint:gosec // a secret: never logged, see LogValue
	PasswordFile string
}

// RegisterFlags registers the security flags under the names every command
// shares. Environment equivalents come from the command's flag set
// (internal/cli), so the password can be given as an environment variable
// or a file as well as a flag.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.TLS, "kafka-tls", false, "connect to Kafka over TLS (implied by the other --kafka-tls-* flags)")
	fs.StringVar(&c.CAFile, "kafka-tls-ca", "", "PEM `file` of the CAs that sign the brokers' certificates (default: the system pool)")
	fs.StringVar(&c.CertFile, "kafka-tls-cert", "", "PEM `file` of the client certificate, for brokers that require mutual TLS")
	fs.StringVar(&c.KeyFile, "kafka-tls-key", "", "PEM `file` of the client certificate's private key")
	fs.StringVar(&c.ServerName, "kafka-tls-server-name", "", "name expected in the brokers' certificates (default: the host of each broker address)")
	fs.BoolVar(&c.Insecure, "kafka-tls-insecure", false, "do not verify the brokers' certificates (test clusters only: anyone on the path can read and alter the traffic)")
	fs.StringVar(&c.Mechanism, "kafka-sasl-mechanism", "", "SASL `mechanism`: plain, scram-sha-256 or scram-sha-512 (empty: no SASL)")
	fs.StringVar(&c.User, "kafka-sasl-user", "", "SASL user name")
	fs.StringVar(&c.Password, "kafka-sasl-password", "", "SASL password (prefer the environment variable or --kafka-sasl-password-file: a flag is visible in the process list)")
	fs.StringVar(&c.PasswordFile, "kafka-sasl-password-file", "", "`file` holding the SASL password (trailing newline ignored)")
}

// LogValue keeps the password out of every log line.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Bool("tls", c.tlsOn()),
		slog.String("ca", c.CAFile),
		slog.Bool("client_cert", c.CertFile != ""),
		slog.Bool("insecure", c.Insecure),
		slog.String("sasl", c.Mechanism),
		slog.String("user", c.User),
	)
}

// String is LogValue for fmt: no secret.
func (c Config) String() string { return c.LogValue().String() }

func (c Config) tlsOn() bool {
	return c.TLS || c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" || c.ServerName != "" || c.Insecure
}

// Validate reports flag combinations that cannot work, before anything is
// dialled.
func (c Config) Validate() error {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("kafka TLS: --kafka-tls-cert and --kafka-tls-key go together")
	}
	switch strings.ToLower(c.Mechanism) {
	case "":
		if c.User != "" || c.Password != "" || c.PasswordFile != "" {
			return errors.New("kafka SASL: a user or password is set but --kafka-sasl-mechanism is not")
		}
	case MechanismPlain, MechanismSHA256, MechanismSHA512:
		if c.User == "" {
			return fmt.Errorf("kafka SASL %s: --kafka-sasl-user is required", c.Mechanism)
		}
		if c.Password != "" && c.PasswordFile != "" {
			return errors.New("kafka SASL: give the password once, by --kafka-sasl-password (or its environment variable) or by --kafka-sasl-password-file")
		}
	default:
		return fmt.Errorf("kafka SASL: unknown mechanism %q (want plain, scram-sha-256 or scram-sha-512)", c.Mechanism)
	}
	return nil
}

// TLSConfig returns the client TLS configuration, or nil for plaintext.
func (c Config) TLSConfig() (*tls.Config, error) {
	if !c.tlsOn() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.Insecure} //nolint:gosec // opt-in, documented
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka TLS CA: %s holds no PEM certificate", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func (c Config) password() (string, error) {
	if c.PasswordFile == "" {
		return c.Password, nil
	}
	b, err := os.ReadFile(c.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("kafka SASL password file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// SASL returns the SASL mechanism, or nil when SASL is off.
func (c Config) SASL() (sasl.Mechanism, error) {
	m := strings.ToLower(c.Mechanism)
	if m == "" {
		return nil, nil
	}
	pw, err := c.password()
	if err != nil {
		return nil, err
	}
	switch m {
	case MechanismPlain:
		return plain.Mechanism{Username: c.User, Password: pw}, nil
	case MechanismSHA256:
		return scram.Mechanism(scram.SHA256, c.User, pw)
	case MechanismSHA512:
		return scram.Mechanism(scram.SHA512, c.User, pw)
	}
	return nil, fmt.Errorf("kafka SASL: unknown mechanism %q", c.Mechanism)
}

// Conn is a resolved configuration: what kafka-go's writers, readers and
// admin clients take. Build it once per process.
type Conn struct {
	TLS  *tls.Config
	SASL sasl.Mechanism
	user string // for error messages only
}

// Resolve validates c and loads its files.
func (c Config) Resolve() (Conn, error) {
	if err := c.Validate(); err != nil {
		return Conn{}, err
	}
	t, err := c.TLSConfig()
	if err != nil {
		return Conn{}, err
	}
	m, err := c.SASL()
	if err != nil {
		return Conn{}, err
	}
	return Conn{TLS: t, SASL: m, user: c.User}, nil
}

// Transport returns a kafka-go transport (for Writer and Client) using the
// connection's security.
func (c Conn) Transport() *kafka.Transport {
	return &kafka.Transport{TLS: c.TLS, SASL: c.SASL, DialTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second, MetadataTTL: 6 * time.Second}
}

// Dialer returns a kafka-go dialer (for Reader and Conn).
func (c Conn) Dialer() *kafka.Dialer {
	return &kafka.Dialer{TLS: c.TLS, SASLMechanism: c.SASL, Timeout: 10 * time.Second, DualStack: true}
}

// Check dials every broker once, authenticates and asks for the cluster's
// metadata, so that a misconfigured connection stops a command at start
// with an error that says what is wrong. It gives up after timeout.
func (c Conn) Check(ctx context.Context, brokers []string, timeout time.Duration) error {
	if len(brokers) == 0 {
		return errors.New("kafka: no broker address")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := c.Dialer()
	var errs []error
	for _, b := range brokers {
		conn, err := d.DialContext(ctx, "tcp", b)
		if err == nil {
			// A TLS listener answering a plaintext client, or the
			// reverse, often shows only here: bound the read.
			_ = conn.SetDeadline(deadline(ctx))
			// Metadata, not ApiVersions: brokers answer ApiVersions
			// before authentication, so only a later request shows that
			// a SASL listener refuses an unauthenticated client.
			_, err = conn.Brokers()
			_ = conn.Close()
		}
		if err == nil {
			return nil
		}
		errs = append(errs, c.explain(b, err))
	}
	return errors.Join(errs...)
}

func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(10 * time.Second)
}

// explain turns the errors of a failed connection check into a message an
// operator can act on. The password is never part of it.
func (c Conn) explain(broker string, err error) error {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		recordHeader     tls.RecordHeaderError
		kerr             kafka.Error
		netErr           net.Error
	)
	switch {
	case errors.As(err, &unknownAuthority):
		return fmt.Errorf("kafka %s: the broker's certificate is not signed by a trusted CA (set --kafka-tls-ca): %w", broker, err)
	case errors.As(err, &hostname):
		return fmt.Errorf("kafka %s: the broker's certificate does not name this host (set --kafka-tls-server-name): %w", broker, err)
	case errors.As(err, &invalid):
		return fmt.Errorf("kafka %s: the broker's certificate is invalid: %w", broker, err)
	case errors.As(err, &recordHeader):
		return fmt.Errorf("kafka %s: the broker did not answer TLS (is its listener plaintext? drop --kafka-tls): %w", broker, err)
	case errors.As(err, &kerr) && (kerr == kafka.SASLAuthenticationFailed || kerr == kafka.IllegalSASLState):
		return fmt.Errorf("kafka %s: SASL authentication failed for user %q (wrong user, password or mechanism): %w", broker, c.user, err)
	case errors.As(err, &kerr) && kerr == kafka.UnsupportedSASLMechanism:
		return fmt.Errorf("kafka %s: the broker does not accept SASL mechanism %s: %w", broker, c.SASL.Name(), err)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err):
		if c.TLS == nil {
			return fmt.Errorf("kafka %s: the broker closed the connection (is its listener TLS? set --kafka-tls; or does it require SASL?): %w", broker, err)
		}
		return fmt.Errorf("kafka %s: the broker closed the connection (does it require SASL or a client certificate?): %w", broker, err)
	case errors.As(err, &netErr) && netErr.Timeout():
		if c.TLS == nil {
			return fmt.Errorf("kafka %s: no answer in time (a TLS listener waits silently for a plaintext client: set --kafka-tls?): %w", broker, err)
		}
		return fmt.Errorf("kafka %s: no answer in time: %w", broker, err)
	}
	return fmt.Errorf("kafka %s: %w", broker, err)
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

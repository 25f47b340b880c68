package redisflag

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options says how to reach Redis.
type Options struct {
	// Addr is host:port of one Redis, or a comma-separated list of the
	// seed nodes of a Redis Cluster (two or more addresses mean a
	// cluster).
	Addr string
	// Cluster uses the Redis Cluster client even with one seed address.
	Cluster  bool
	Username string // ACL user; empty for the default user
	Password string //nolint:gosec // a secret: never logged, see LogValue
	// DB is the database number; a cluster has only database 0.
	DB int
	// TLS enables TLS; it is implied by any of the TLS fields below.
	// TLSCAFile holds the PEM CAs that sign the servers' certificates
	// (default: the system pool); TLSCertFile and TLSKeyFile a client
	// certificate for servers that require one; TLSServerName the name
	// expected in the servers' certificates (default: the host of each
	// address). TLSInsecureSkipVerify disables certificate checks (test
	// clusters with self-signed certificates only).
	TLS                   bool
	TLSCAFile             string
	TLSCertFile           string
	TLSKeyFile            string
	TLSServerName         string
	TLSInsecureSkipVerify bool
}

// Addrs returns the addresses of Addr, split at commas.
func (o Options) Addrs() []string {
	var out []string
	for a := range strings.SplitSeq(o.Addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// IsCluster reports whether Connect makes a Redis Cluster client.
func (o Options) IsCluster() bool { return o.Cluster || len(o.Addrs()) > 1 }

func (o Options) tlsOn() bool {
	return o.TLS || o.TLSCAFile != "" || o.TLSCertFile != "" || o.TLSKeyFile != "" || o.TLSServerName != "" || o.TLSInsecureSkipVerify
}

// LogValue keeps the password out of every log line.
func (o Options) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("addr", o.Addr),
		slog.Bool("cluster", o.IsCluster()),
		slog.Int("db", o.DB),
		slog.String("user", o.Username),
		slog.Bool("password", o.Password != ""),
		slog.Bool("tls", o.tlsOn()),
		slog.Bool("client_cert", o.TLSCertFile != ""),
		slog.Bool("insecure", o.TLSInsecureSkipVerify),
	)
}

// String is LogValue for fmt: no secret.
func (o Options) String() string { return o.LogValue().String() }

// TLSConfig returns the client TLS configuration, or nil without TLS. It
// reads the CA and certificate files.
func (o Options) TLSConfig() (*tls.Config, error) {
	if !o.tlsOn() {
		return nil, nil
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return nil, errors.New("redis TLS: a client certificate needs both its certificate and its key file")
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         o.TLSServerName,
		InsecureSkipVerify: o.TLSInsecureSkipVerify, //nolint:gosec // opt-in, for test clusters
	}
	if o.TLSCAFile != "" {
		pem, err := os.ReadFile(o.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("redis TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis TLS CA: %s holds no PEM certificate", o.TLSCAFile)
		}
		cfg.RootCAs = pool
	}
	if o.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("redis TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Dial opens a client, a single-node one or a Redis Cluster one (see
// Options.Addr and Options.Cluster), and pings the server, so a wrong
// address, password or certificate fails at start-up with a clear message
// rather than at the first request. The ping is bounded by ctx and by a
// 5 s dial timeout.
func Dial(ctx context.Context, o Options) (redis.UniversalClient, error) {
	addrs := o.Addrs()
	if len(addrs) == 0 {
		return nil, errors.New("redis: empty address")
	}
	tc, err := o.TLSConfig()
	if err != nil {
		return nil, err
	}
	var rdb redis.UniversalClient
	if o.IsCluster() {
		if o.DB != 0 {
			return nil, fmt.Errorf("redis cluster %s: database %d requested, a cluster has only database 0", o.Addr, o.DB)
		}
		rdb = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: addrs, Username: o.Username, Password: o.Password, TLSConfig: tc, DialTimeout: 5 * time.Second,
			ContextTimeoutEnabled: true,
		})
	} else {
		rdb = redis.NewClient(&redis.Options{
			Addr: addrs[0], Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: tc, DialTimeout: 5 * time.Second,
			// A context's deadline bounds the call's reads and writes: the
			// feature cache gives a hung Redis milliseconds, not the 3 s
			// read timeout (times the retries) it waited before.
			ContextTimeoutEnabled: true,
		})
	}
	if err := ping(ctx, rdb); err != nil {
		_ = rdb.Close()
		if o.IsCluster() {
			return nil, fmt.Errorf("redis cluster %s: %w", o.Addr, err)
		}
		return nil, fmt.Errorf("redis %s db %d: %w", o.Addr, o.DB, err)
	}
	return rdb, nil
}

// ping checks the connection; on a cluster it pings every master, so a
// node the client cannot reach (or authenticate to) is reported now.
func ping(ctx context.Context, rdb redis.UniversalClient) error {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		if err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			if err := n.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("node %s: %w", n.Options().Addr, err)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("ping: %w", err)
		}
		return nil
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

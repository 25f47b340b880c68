// Package redisflag holds the settings of the Redis behind the model
// registry and the feature cache, their flags, and the connection the
// services make at start-up (Dial: the client, single-node or cluster, with
// TLS). It links no model code, so every command may use it: ingest's
// feature cache connects through it too.
package redisflag

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/cli"
)

// Config says how to reach the Redis holding the model registry and the
// feature cache.
type Config struct {
	// Addr is host:port, a redis:// or rediss:// URL, or a comma-separated
	// list of Redis Cluster seed nodes.
	Addr string
	// Cluster uses the Redis Cluster client even with one seed address.
	Cluster            bool
	Username, Password string
	// PasswordFile holds the password (trailing newline ignored).
	PasswordFile string
	DB           int
	// TLS switches TLS on; the CA, certificate, key and server name imply
	// it.
	TLS, TLSInsecure                      bool
	TLSCA, TLSCert, TLSKey, TLSServerName string
	RegistryPrefix                        string
}

// Default returns the defaults of the Redis flags.
func Default() Config {
	return Config{Addr: "127.0.0.1:6379", RegistryPrefix: "mimlstream:models"}
}

// Register adds the Redis flags to fs, with c's values as defaults.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "redis", c.Addr, "Redis `address`: host:port, a redis:// or rediss:// URL, or a comma-separated list of Redis Cluster nodes")
	fs.BoolVar(&c.Cluster, "redis-cluster", c.Cluster, "use the Redis Cluster protocol (implied by more than one address in --redis)")
	fs.StringVar(&c.Username, "redis-username", c.Username, "Redis ACL user")
	fs.StringVar(&c.Password, "redis-password", c.Password, "Redis password (prefer the environment variable or --redis-password-file: a flag is visible in the process list)")
	fs.StringVar(&c.PasswordFile, "redis-password-file", c.PasswordFile, "`file` holding the Redis password (trailing newline ignored)")
	fs.IntVar(&c.DB, "redis-db", c.DB, "Redis database number (a cluster has only 0)")
	fs.BoolVar(&c.TLS, "redis-tls", c.TLS, "connect to Redis over TLS (implied by the other --redis-tls-* flags and by a rediss:// URL)")
	fs.StringVar(&c.TLSCA, "redis-tls-ca", c.TLSCA, "PEM `file` of the CAs that sign the Redis servers' certificates (default: the system pool)")
	fs.StringVar(&c.TLSCert, "redis-tls-cert", c.TLSCert, "PEM `file` of the client certificate, for servers that require one (tls-auth-clients)")
	fs.StringVar(&c.TLSKey, "redis-tls-key", c.TLSKey, "PEM `file` of the client certificate's private key")
	fs.StringVar(&c.TLSServerName, "redis-tls-server-name", c.TLSServerName, "name expected in the servers' certificates (default: the host of each address)")
	fs.BoolVar(&c.TLSInsecure, "redis-tls-insecure", c.TLSInsecure, "do not verify the Redis certificates (test clusters only: anyone on the path can read and alter the traffic)")
	fs.StringVar(&c.RegistryPrefix, "registry-prefix", c.RegistryPrefix, "key prefix of the model registry")
}

// Options converts the settings, reading a URL when one is given and the
// password file. A bad URL, a password given twice or an unreadable
// password file is a usage error.
func (c Config) Options() (Options, error) {
	o := Options{Addr: c.Addr, Cluster: c.Cluster, Username: c.Username, Password: c.Password, DB: c.DB,
		TLS: c.TLS, TLSCAFile: c.TLSCA, TLSCertFile: c.TLSCert, TLSKeyFile: c.TLSKey, TLSServerName: c.TLSServerName, TLSInsecureSkipVerify: c.TLSInsecure}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return o, cli.Usagef("--redis-tls-cert and --redis-tls-key go together")
	}
	if c.PasswordFile != "" {
		if c.Password != "" {
			return o, cli.Usagef("give the Redis password once, by --redis-password (or its environment variable) or by --redis-password-file")
		}
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return o, cli.Usagef("--redis-password-file: %w", err)
		}
		o.Password = strings.TrimRight(string(b), "\r\n")
	}
	isURL := strings.HasPrefix(c.Addr, "redis://") || strings.HasPrefix(c.Addr, "rediss://")
	if isURL && strings.Contains(c.Addr, ",") {
		return o, cli.Usagef("--redis: a list of cluster nodes is host:port,host:port, not URLs")
	}
	if isURL {
		u, err := redis.ParseURL(c.Addr)
		if err != nil {
			return o, cli.Usagef("--redis: %w", err)
		}
		o.Addr, o.DB = u.Addr, u.DB
		if u.Username != "" {
			o.Username = u.Username
		}
		if u.Password != "" {
			o.Password = u.Password
		}
		o.TLS = o.TLS || u.TLSConfig != nil
		// A URL without a database path leaves --redis-db in force.
		if pu, err := url.Parse(c.Addr); err == nil && strings.Trim(pu.Path, "/") == "" && c.DB != 0 {
			o.DB = c.DB
		}
	}
	return o, nil
}

// ErrAuth marks a Redis that refused the credentials (a wrong password or
// user, none where one is required, an ACL without PING): asking again
// cannot help, so Connect ends at once and the service exits 1, as for a
// wrong Kafka password.
var ErrAuth = errors.New("redis refused the credentials")

// authRefusals are the error prefixes of a Redis refusing credentials:
// WRONGPASS and NOPERM (ACLs, Redis 6+), NOAUTH (a password required, none
// given), and the "ERR AUTH ..." and "ERR invalid password" of a Redis
// without ACLs.
var authRefusals = []string{"WRONGPASS", "NOAUTH", "NOPERM", "ERR AUTH", "ERR invalid password", "ERR invalid username-password"}

// authRefused reports whether err is Redis refusing the credentials.
func authRefused(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, p := range authRefusals {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// Connect opens the Redis client (a cluster client for a cluster),
// retrying until Redis answers or ctx ends: a service started before its
// Redis must wait, not exit. A Redis that refuses the credentials ends it
// at once with ErrAuth.
func (c Config) Connect(ctx context.Context, log *slog.Logger) (redis.UniversalClient, error) {
	o, err := c.Options()
	if err != nil {
		return nil, err
	}
	// The service's Redis clients are made here: go-redis's own lines go
	// through the service's logger from now on (once per process).
	RouteLogs(log)
	backoff := 200 * time.Millisecond
	for {
		rdb, err := Dial(ctx, o)
		if err == nil {
			log.Info("redis connected", "redis", o)
			return rdb, nil
		}
		if authRefused(err) {
			return nil, fmt.Errorf("connect to redis: %w: %w (check --redis-password, --redis-password-file or the URL's user and password)", ErrAuth, err)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connect to redis: %w", err)
		}
		log.Warn("redis unavailable; retrying", "redis", o, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to redis: %w", ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

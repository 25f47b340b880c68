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

	// name is the name the flags were registered under (RegisterAs), so
	// that errors name the flags the operator set; "" is DefaultName.
	name string
}

// DefaultName is the name of the flags of the registry's Redis: --redis,
// --redis-password, ...
const DefaultName = "redis"

// Default returns the defaults of the Redis flags.
func Default() Config {
	return Config{Addr: "127.0.0.1:6379", RegistryPrefix: "mimlstream:models"}
}

// Named returns the empty settings of a Redis whose flags are registered
// as name (RegisterAs): so a Config made in code, not parsed from flags,
// names the same flags in its errors.
func Named(name string) Config { return Config{name: name} }

// flagName returns the name of the flag of setting under c's name:
// --NAME for the address (setting ""), --NAME-SETTING otherwise.
func (c Config) flagName(setting string) string {
	n := c.name
	if n == "" {
		n = DefaultName
	}
	if setting == "" {
		return n
	}
	return n + "-" + setting
}

// Register adds the flags of the registry's Redis to fs, with c's values
// as defaults: the connection flags under DefaultName and
// --registry-prefix.
func (c *Config) Register(fs *flag.FlagSet) {
	c.RegisterAs(fs, DefaultName, "")
	fs.StringVar(&c.RegistryPrefix, "registry-prefix", c.RegistryPrefix, "key prefix of the model registry")
}

// RegisterAs adds the connection flags of another Redis to fs under name,
// with c's values as defaults: --NAME (the address), --NAME-cluster,
// --NAME-username, --NAME-password, --NAME-password-file, --NAME-db,
// --NAME-tls, --NAME-tls-ca, --NAME-tls-cert, --NAME-tls-key,
// --NAME-tls-server-name and --NAME-tls-insecure; Options and Connect
// name them in their errors. addrUsage is the usage of --NAME, saying
// what the Redis is for ("": a generic one).
func (c *Config) RegisterAs(fs *flag.FlagSet, name, addrUsage string) {
	c.name = name
	f := c.flagName
	if addrUsage == "" {
		addrUsage = "Redis `address`: host:port, a redis:// or rediss:// URL, or a comma-separated list of Redis Cluster nodes"
	}
	fs.StringVar(&c.Addr, f(""), c.Addr, addrUsage)
	for _, s := range c.settings() {
		s.register(fs, f(s.name))
	}
}

// setting is one connection flag besides the address: its name under the
// Redis's name, the field it sets (one of str, on, num) and its usage.
type setting struct {
	name  string
	str   *string
	on    *bool
	num   *int
	usage string
}

// settings lists c's connection flags besides the address, once for
// RegisterAs, which registers them, and CheckOptional, which refuses them
// without an address.
func (c *Config) settings() []setting {
	f := c.flagName
	return []setting{
		{name: "cluster", on: &c.Cluster, usage: "use the Redis Cluster protocol (implied by more than one address in --" + f("") + ")"},
		{name: "username", str: &c.Username, usage: "Redis ACL user"},
		{name: "password", str: &c.Password, usage: "Redis password (prefer the environment variable or --" + f("password-file") + ": a flag is visible in the process list)"},
		{name: "password-file", str: &c.PasswordFile, usage: "`file` holding the Redis password (trailing newline ignored)"},
		{name: "db", num: &c.DB, usage: "Redis database number (a cluster has only 0)"},
		{name: "tls", on: &c.TLS, usage: "connect to Redis over TLS (implied by the other --" + f("tls") + "-* flags and by a rediss:// URL)"},
		{name: "tls-ca", str: &c.TLSCA, usage: "PEM `file` of the CAs that sign the Redis servers' certificates (default: the system pool)"},
		{name: "tls-cert", str: &c.TLSCert, usage: "PEM `file` of the client certificate, for servers that require one (tls-auth-clients)"},
		{name: "tls-key", str: &c.TLSKey, usage: "PEM `file` of the client certificate's private key"},
		{name: "tls-server-name", str: &c.TLSServerName, usage: "name expected in the servers' certificates (default: the host of each address)"},
		{name: "tls-insecure", on: &c.TLSInsecure, usage: "do not verify the Redis certificates (test clusters only: anyone on the path can read and alter the traffic)"},
	}
}

func (s setting) register(fs *flag.FlagSet, name string) {
	switch {
	case s.str != nil:
		fs.StringVar(s.str, name, *s.str, s.usage)
	case s.on != nil:
		fs.BoolVar(s.on, name, *s.on, s.usage)
	default:
		fs.IntVar(s.num, name, *s.num, s.usage)
	}
}

// given reports whether the setting differs from its zero value.
func (s setting) given() bool {
	switch {
	case s.str != nil:
		return *s.str != ""
	case s.on != nil:
		return *s.on
	default:
		return *s.num != 0
	}
}

// CheckOptional checks the settings of a Redis that may be left out (an
// empty address: no Redis), as Options would at the start: a setting
// given without the address is a usage error, not silently unused.
func (c Config) CheckOptional() error {
	if c.Addr != "" {
		_, err := c.Options()
		return err
	}
	for _, s := range c.settings() {
		if s.given() {
			return cli.Usagef("--%s is given without --%s", c.flagName(s.name), c.flagName(""))
		}
	}
	return nil
}

// Options converts the settings, reading a URL when one is given and the
// password file. A bad URL, a password given twice or an unreadable
// password file is a usage error.
func (c Config) Options() (Options, error) {
	f := c.flagName
	o := Options{Addr: c.Addr, Cluster: c.Cluster, Username: c.Username, Password: c.Password, DB: c.DB,
		TLS: c.TLS, TLSCAFile: c.TLSCA, TLSCertFile: c.TLSCert, TLSKeyFile: c.TLSKey, TLSServerName: c.TLSServerName, TLSInsecureSkipVerify: c.TLSInsecure}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return o, cli.Usagef("--%s and --%s go together", f("tls-cert"), f("tls-key"))
	}
	if c.PasswordFile != "" {
		if c.Password != "" {
			return o, cli.Usagef("give the Redis password once, by --%s (or its environment variable) or by --%s", f("password"), f("password-file"))
		}
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return o, cli.Usagef("--%s: %w", f("password-file"), err)
		}
		o.Password = strings.TrimRight(string(b), "\r\n")
	}
	isURL := strings.HasPrefix(c.Addr, "redis://") || strings.HasPrefix(c.Addr, "rediss://")
	if isURL && strings.Contains(c.Addr, ",") {
		return o, cli.Usagef("--%s: a list of cluster nodes is host:port,host:port, not URLs", f(""))
	}
	if isURL {
		u, err := redis.ParseURL(c.Addr)
		if err != nil {
			return o, cli.Usagef("--%s: %w", f(""), err)
		}
		o.Addr, o.DB = u.Addr, u.DB
		if u.Username != "" {
			o.Username = u.Username
		}
		if u.Password != "" {
			o.Password = u.Password
		}
		o.TLS = o.TLS || u.TLSConfig != nil
		// A URL without a database path leaves the db flag in force.
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
			return nil, fmt.Errorf("connect to redis: %w: %w (check --%s, --%s or the URL's user and password)", ErrAuth, err, c.flagName("password"), c.flagName("password-file"))
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

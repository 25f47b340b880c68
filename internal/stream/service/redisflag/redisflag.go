// Package redisflag holds the settings of the Redis behind the model
// registry and the feature cache, their flags, and the connection the
// annotate and retrain services make at start-up. It is apart from package
// service because ingest does not use Redis.
package redisflag

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/featurestore"
)

// Config says how to reach the Redis holding the model registry and the
// feature cache.
type Config struct {
	Addr, Username, Password string
	DB                       int
	TLS, TLSInsecure         bool
	RegistryPrefix           string
}

// Default returns the defaults of the Redis flags.
func Default() Config {
	return Config{Addr: "127.0.0.1:6379", RegistryPrefix: "mimlstream:models"}
}

// Register adds the Redis flags to fs, with c's values as defaults.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "redis", c.Addr, "Redis `address` (host:port, or a redis:// or rediss:// URL)")
	fs.StringVar(&c.Username, "redis-username", c.Username, "Redis ACL user")
	fs.StringVar(&c.Password, "redis-password", c.Password, "Redis password")
	fs.IntVar(&c.DB, "redis-db", c.DB, "Redis database number")
	fs.BoolVar(&c.TLS, "redis-tls", c.TLS, "connect to Redis over TLS")
	fs.BoolVar(&c.TLSInsecure, "redis-tls-insecure", c.TLSInsecure, "skip Redis certificate verification (test clusters only)")
	fs.StringVar(&c.RegistryPrefix, "registry-prefix", c.RegistryPrefix, "key prefix of the model registry")
}

// Options converts the settings, reading a URL when one is given. A bad
// URL is a usage error.
func (c Config) Options() (featurestore.Options, error) {
	o := featurestore.Options{Addr: c.Addr, Username: c.Username, Password: c.Password, DB: c.DB, TLS: c.TLS, TLSInsecureSkipVerify: c.TLSInsecure}
	if strings.HasPrefix(c.Addr, "redis://") || strings.HasPrefix(c.Addr, "rediss://") {
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

// Connect opens the Redis client, retrying until Redis answers or ctx ends:
// a service started before its Redis must wait, not exit.
func (c Config) Connect(ctx context.Context, log *slog.Logger) (*redis.Client, error) {
	o, err := c.Options()
	if err != nil {
		return nil, err
	}
	backoff := 200 * time.Millisecond
	for {
		rdb, err := featurestore.Connect(ctx, o)
		if err == nil {
			return rdb, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connect to redis: %w", err)
		}
		log.Warn("redis unavailable; retrying", "addr", o.Addr, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to redis: %w", ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

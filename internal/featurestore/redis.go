// Package featurestore keeps the service's shared state in Redis: an
// immutable, checksummed model registry with "current"/"previous" aliases
// and change notifications (Registry), and a bounded cache of feature
// vectors (Cache).
//
// Every key of a Registry or Cache carries the hash tag "{prefix}", so all
// keys of one instance hash to one Redis Cluster slot and the multi-key
// transactions and scripts below stay legal on a cluster.
package featurestore

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options says how to reach Redis.
type Options struct {
	Addr     string // host:port
	Username string // ACL user; empty for the default user
	Password string
	DB       int
	// TLS enables TLS; TLSInsecureSkipVerify disables certificate checks
	// (test clusters with self-signed certificates only).
	TLS                   bool
	TLSInsecureSkipVerify bool
}

// Connect opens a client and pings the server, so a wrong address or
// password fails at start-up with a clear message rather than at the first
// request. The ping is bounded by ctx and by a 5 s dial timeout.
func Connect(ctx context.Context, o Options) (*redis.Client, error) {
	if o.Addr == "" {
		return nil, fmt.Errorf("redis: empty address")
	}
	ro := &redis.Options{
		Addr:        o.Addr,
		Username:    o.Username,
		Password:    o.Password,
		DB:          o.DB,
		DialTimeout: 5 * time.Second,
	}
	if o.TLS {
		ro.TLSConfig = &tls.Config{
			MinVersion:         tls.VersionTLS12,
			InsecureSkipVerify: o.TLSInsecureSkipVerify, //nolint:gosec // opt-in, for test clusters
		}
	}
	rdb := redis.NewClient(ro)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis %s db %d: ping: %w", o.Addr, o.DB, err)
	}
	return rdb, nil
}

// base returns the key base for prefix: the prefix in braces, so that it is
// the Redis Cluster hash tag of every key built on it.
func base(prefix, def string) string {
	if prefix == "" {
		prefix = def
	}
	return "{" + prefix + "}"
}

// Package redisserver runs an in-process Redis (miniredis) for the demo,
// the tests and development tools. No production package imports it
// (internal/archtest checks that the service commands do not link it).
package redisserver

import (
	"fmt"

	"github.com/alicebob/miniredis/v2"
)

// Start runs an in-process Redis on a free local port. It supports
// everything featurestore uses (transactions, Lua scripts, pub/sub, TTLs).
// TTLs follow the wall clock; expired keys are dropped lazily when the
// server is next touched, which is invisible to clients. stop closes the
// server and every connection to it.
func Start() (addr string, stop func(), err error) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.Start(); err != nil {
		return "", nil, fmt.Errorf("start embedded redis: %w", err)
	}
	return m.Addr(), m.Close, nil
}

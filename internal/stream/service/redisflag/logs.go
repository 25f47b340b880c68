package redisflag

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisLogs makes RouteLogs act once per process. go-redis has one logger
// per process: redis.SetLogger sets a package variable, unsynchronised,
// that every client reads when it logs. It is therefore set once, by the
// first service set-up, before any client of the process can log, and
// never again while clients may be logging.
var redisLogs sync.Once

// RouteLogs sends go-redis's own log lines (the connection pool's dial
// failures, written with the standard log package by default, unstructured
// and twice a second during an outage) through log at WARN. A line like the
// last one within repeatEvery is counted rather than written: an outage
// says so once, then every repeatEvery with how many lines it held back.
// Only the first call of a process takes effect.
func RouteLogs(log *slog.Logger) {
	redisLogs.Do(func() { redis.SetLogger(&slogRedis{log: log, every: repeatEvery}) })
}

// repeatEvery is how often a repeated go-redis line is written again.
const repeatEvery = time.Minute

// slogRedis is go-redis's logger (internal.Logging) over slog.
type slogRedis struct {
	log   *slog.Logger
	every time.Duration

	mu   sync.Mutex
	last string
	at   time.Time
	held int
}

func (l *slogRedis) Printf(ctx context.Context, format string, v ...any) {
	l.mu.Lock()
	now := time.Now()
	if format == l.last && now.Sub(l.at) < l.every {
		l.held++
		l.mu.Unlock()
		return
	}
	held := l.held
	l.last, l.at, l.held = format, now, 0
	l.mu.Unlock()
	attrs := []any{"component", "go-redis"}
	if held > 0 {
		attrs = append(attrs, "repeated", held)
	}
	l.log.WarnContext(ctx, fmt.Sprintf(format, v...), attrs...)
}

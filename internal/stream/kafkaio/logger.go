package kafkaio

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// Logger routes kafka-go's printf logging to slog at level. Idle-connection
// noise is logged at debug whatever the level: a consumer reader whose
// fetch wait ends with no message reports the connection's read deadline
// as an error ("i/o timeout"), about 40 times a minute per idle annotator,
// and retries at once; it says nothing about the health of the cluster.
//
// Above debug, a message of the same form as one logged less than a
// minute ago is counted, not logged: a broker that is down makes kafka-go
// report every reconnection of every partition (hundreds of lines a
// minute) in a few forms. Each form is logged when it first appears, then
// at most once a minute with how many were held back ("repeated").
func Logger(log *slog.Logger, level slog.Level) kafka.Logger {
	return newLogger(log, level, time.Minute)
}

func newLogger(log *slog.Logger, level slog.Level, every time.Duration) kafka.Logger {
	var mu sync.Mutex
	type seen struct {
		at   time.Time
		held int
	}
	forms := map[string]*seen{}
	return kafka.LoggerFunc(func(format string, args ...any) {
		ctx := context.Background()
		// kafka-go logs every empty fetch; format only what is kept.
		if !log.Enabled(ctx, level) && !log.Enabled(ctx, slog.LevelDebug) {
			return
		}
		msg := strings.TrimSpace(fmt.Sprintf(format, args...))
		l := level
		if level > slog.LevelDebug && IdleNoise(msg) {
			l = slog.LevelDebug
		}
		if !log.Enabled(ctx, l) {
			return
		}
		var attrs []any
		if l > slog.LevelDebug {
			mu.Lock()
			now := time.Now()
			s := forms[format]
			if s != nil && now.Sub(s.at) < every {
				s.held++
				mu.Unlock()
				return
			}
			if s == nil {
				if len(forms) >= maxForms {
					clear(forms) // kafka-go has a few dozen forms; bound them anyway
				}
				s = &seen{}
				forms[format] = s
			}
			if s.held > 0 {
				attrs = append(attrs, "repeated", s.held)
			}
			s.at, s.held = now, 0
			mu.Unlock()
		}
		log.Log(ctx, l, "kafka: "+msg, attrs...)
	})
}

// maxForms bounds the message forms a Logger remembers.
const maxForms = 256

// IdleNoise reports whether a kafka-go log message is the read deadline of
// an idle connection rather than a failure.
func IdleNoise(msg string) bool {
	return strings.Contains(msg, "i/o timeout") ||
		strings.Contains(msg, "no messages received from kafka within the allocated time")
}

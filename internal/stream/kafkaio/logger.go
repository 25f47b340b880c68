package kafkaio

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/segmentio/kafka-go"
)

// Logger routes kafka-go's printf logging to slog at level. Idle-connection
// noise is logged at debug whatever the level: a consumer reader whose
// fetch wait ends with no message reports the connection's read deadline
// as an error ("i/o timeout"), about 40 times a minute per idle annotator,
// and retries at once; it says nothing about the health of the cluster.
func Logger(log *slog.Logger, level slog.Level) kafka.Logger {
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
		if log.Enabled(ctx, l) {
			log.Log(ctx, l, "kafka: "+msg)
		}
	})
}

// IdleNoise reports whether a kafka-go log message is the read deadline of
// an idle connection rather than a failure.
func IdleNoise(msg string) bool {
	return strings.Contains(msg, "i/o timeout") ||
		strings.Contains(msg, "no messages received from kafka within the allocated time")
}

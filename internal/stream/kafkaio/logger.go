package kafkaio

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/segmentio/kafka-go"
)

// Logger routes kafka-go's printf logging to slog at level.
func Logger(log *slog.Logger, level slog.Level) kafka.Logger {
	return kafka.LoggerFunc(func(format string, args ...any) {
		// kafka-go logs every empty fetch; format only what is kept.
		if ctx := context.Background(); log.Enabled(ctx, level) {
			log.Log(ctx, level, "kafka: "+strings.TrimSpace(fmt.Sprintf(format, args...)))
		}
	})
}

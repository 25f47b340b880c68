package kafkaio

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestLoggerQuietsIdleNoise catches the idle-connection read deadline
// logged at WARN (tens of lines a minute per idle annotator) and, the
// other way, a real error demoted with it.
func TestLoggerQuietsIdleNoise(t *testing.T) {
	for _, tc := range []struct {
		logLevel slog.Level
		msg      string
		want     string // "" : nothing logged
	}{
		{slog.LevelInfo, "failed to read from current broker [127.0.0.1:9092] for partition 0 of bags at offset 12: read tcp 127.0.0.1:5->127.0.0.1:9092: i/o timeout", ""},
		{slog.LevelDebug, "failed to read from current broker for partition 0 of bags at offset 12: i/o timeout", "level=DEBUG"},
		{slog.LevelInfo, "error initializing the kafka reader for partition 0 of bags: [3] Unknown Topic Or Partition", "level=WARN"},
	} {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.logLevel}))
		Logger(log, slog.LevelWarn).Printf("%s", tc.msg)
		got := buf.String()
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("log level %v, %q: logged %q, want %q", tc.logLevel, tc.msg, got, tc.want)
		}
	}
}

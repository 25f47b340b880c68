package kafkaio

import (
	"fmt"

	"github.com/segmentio/kafka-go"
)

// StartOffset is where a consumer group with no committed offset starts
// reading a partition: "earliest" (the zero value: every bag the topic
// still holds) or "latest" (only bags written after the group joins). A
// group that has committed offsets resumes from them either way.
type StartOffset string

// The start offsets.
const (
	StartEarliest StartOffset = "earliest"
	StartLatest   StartOffset = "latest"
)

// String returns the start offset's name (a flag.Value).
func (s *StartOffset) String() string {
	if *s == "" {
		return string(StartEarliest)
	}
	return string(*s)
}

// Set parses earliest or latest.
func (s *StartOffset) Set(v string) error {
	switch StartOffset(v) {
	case StartEarliest, StartLatest:
		*s = StartOffset(v)
		return nil
	}
	return fmt.Errorf("start offset %q: want earliest or latest", v)
}

// Offset returns the kafka-go ReaderConfig.StartOffset of s.
func (s StartOffset) Offset() int64 {
	if s == StartLatest {
		return kafka.LastOffset
	}
	return kafka.FirstOffset
}

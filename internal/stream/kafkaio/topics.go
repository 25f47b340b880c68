package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
)

// EnsureTopics creates the topics on the cluster reachable at brokers with
// the given partition count, leaving existing topics alone. Topics are
// always created with an explicit partition count: relying on
// auto-creation gives a different layout on every broker and hides
// misconfigured topic names.
func EnsureTopics(ctx context.Context, brokers []string, sec kafkasec.Conn, partitions int, topics ...string) error {
	if len(brokers) == 0 {
		return errors.New("ensure topics: no broker address")
	}
	if partitions <= 0 {
		partitions = 1
	}
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: sec.Transport()}
	req := &kafka.CreateTopicsRequest{}
	for _, t := range topics {
		req.Topics = append(req.Topics, kafka.TopicConfig{Topic: t, NumPartitions: partitions, ReplicationFactor: -1})
	}
	resp, err := cl.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("create topics %v: %w", topics, err)
	}
	var errs []error
	for t, terr := range resp.Errors {
		if terr != nil && !errors.Is(terr, kafka.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("create topic %s: %w", t, terr))
		}
	}
	return errors.Join(errs...)
}

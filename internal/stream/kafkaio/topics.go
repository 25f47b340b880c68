package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	specs := make([]TopicSpec, len(topics))
	for i, t := range topics {
		specs[i] = TopicSpec{Name: t}
	}
	return EnsureTopicSpecs(ctx, brokers, sec, partitions, specs...)
}

// TopicSpec is a topic to create and its topic-level configuration
// (cleanup.policy, retention.ms, ...); nil Configs: the broker's defaults.
type TopicSpec struct {
	Name    string
	Configs map[string]string
}

// EnsureTopicSpecs is EnsureTopics with a configuration per topic. The
// configuration applies when the topic is created; an existing topic is
// left as it is (changing a live topic's retention is an operator's
// decision, made with the cluster's tools).
func EnsureTopicSpecs(ctx context.Context, brokers []string, sec kafkasec.Conn, partitions int, specs ...TopicSpec) error {
	if len(brokers) == 0 {
		return errors.New("ensure topics: no broker address")
	}
	if partitions <= 0 {
		partitions = 1
	}
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: sec.Transport()}
	req := &kafka.CreateTopicsRequest{}
	var names []string
	for _, t := range specs {
		tc := kafka.TopicConfig{Topic: t.Name, NumPartitions: partitions, ReplicationFactor: -1}
		for _, k := range slices.Sorted(maps.Keys(t.Configs)) {
			tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: k, ConfigValue: t.Configs[k]})
		}
		req.Topics = append(req.Topics, tc)
		names = append(names, t.Name)
	}
	resp, err := cl.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("create topics %v: %w", names, err)
	}
	var errs []error
	for t, terr := range resp.Errors {
		if terr != nil && !errors.Is(terr, kafka.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("create topic %s: %w", t, terr))
		}
	}
	return errors.Join(errs...)
}

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
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return waitServed(ctx, brokers, sec, names)
}

// servedTimeout bounds how long EnsureTopicSpecs waits for new topics to
// have a leader on every partition.
const servedTimeout = 30 * time.Second

// waitServed returns once every broker lists every topic with a leader for
// each partition. Apache Kafka answers CreateTopics before the new
// partitions' leaders are known to every broker, and kafka-go's Writer fails
// a write to a topic its metadata does not list yet (Unknown Topic Or
// Partition) instead of retrying; the embedded broker creates topics
// synchronously, so only a real broker shows the gap. Each broker is asked
// on its own connection: a kafka-go Transport answers metadata from its
// cache, which would say nothing about the other brokers.
func waitServed(ctx context.Context, brokers []string, sec kafkasec.Conn, topics []string) error {
	ctx, cancel := context.WithTimeout(ctx, servedTimeout)
	defer cancel()
	d := sec.Dialer()
	for {
		pending := ""
		for _, b := range brokers {
			if pending = unserved(ctx, d, b, topics); pending != "" {
				break
			}
		}
		if pending == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topics created but not served within %v: %s", servedTimeout, pending)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// unserved says which of topics broker does not list with a leader for
// every partition ("" if it lists them all).
func unserved(ctx context.Context, d *kafka.Dialer, broker string, topics []string) string {
	conn, err := d.DialContext(ctx, "tcp", broker)
	if err != nil {
		return fmt.Sprintf("%s: %v", broker, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	parts, err := conn.ReadPartitions(topics...)
	if err != nil {
		return fmt.Sprintf("%s: %v", broker, err)
	}
	led := make(map[string]int, len(topics))
	for _, p := range parts {
		if p.Leader.Host == "" || p.Leader.ID < 0 {
			return fmt.Sprintf("%s: topic %s partition %d has no leader yet", broker, p.Topic, p.ID)
		}
		led[p.Topic]++
	}
	for _, t := range topics {
		if led[t] == 0 {
			return fmt.Sprintf("%s: topic %s not in its metadata yet", broker, t)
		}
	}
	return ""
}

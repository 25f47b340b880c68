package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
)

// DefaultMaxMessageBytes is the message size limit when none is configured:
// Kafka's default max.message.bytes, rounded down to 1 MiB.
const DefaultMaxMessageBytes = 1 << 20

// batchOverhead is what a broker counts against max.message.bytes besides
// the records: the v2 record batch header (61 bytes), rounded up. The limit
// applies to a whole batch, so a record alone must leave room for it.
const batchOverhead = 64

// RecordSize is the size kafka-go accounts for m when it packs batches
// (kafka.Writer.BatchBytes): key, value and headers with their framing. It
// is at least what m takes in a v2 record batch, so batches bounded by it
// never exceed the broker's limit.
func RecordSize(m kafka.Message) int {
	n := 4 + 1 + 1 + 4 + len(m.Key) + 4 + len(m.Value) + 8
	n += varintLen(len(m.Headers))
	for _, h := range m.Headers {
		n += varintLen(len(h.Key)) + len(h.Key) + varintLen(len(h.Value)) + len(h.Value)
	}
	return n
}

// varintLen is the length of n as a zig-zag varint.
func varintLen(n int) int {
	u := uint64(n) << 1
	l := 1
	for u >= 0x80 {
		u >>= 7
		l++
	}
	return l
}

// RecordLimit is the largest RecordSize of a record that fits, alone, in a
// produce request under a max.message.bytes of maxMessageBytes.
func RecordLimit(maxMessageBytes int) int { return maxMessageBytes - batchOverhead }

// TopicMaxMessageBytes asks the cluster for the max.message.bytes of each
// topic (which defaults to the broker's message.max.bytes). It fails when
// the cluster does not answer DescribeConfigs (an ACL may deny it) or
// reports no value for a topic.
func TopicMaxMessageBytes(ctx context.Context, brokers []string, sec kafkasec.Conn, topics ...string) (map[string]int, error) {
	if len(brokers) == 0 {
		return nil, errors.New("describe configs: no broker address")
	}
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: sec.Transport()}
	req := &kafka.DescribeConfigsRequest{}
	for _, t := range topics {
		req.Resources = append(req.Resources, kafka.DescribeConfigRequestResource{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: t, ConfigNames: []string{"max.message.bytes"}})
	}
	resp, err := cl.DescribeConfigs(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("describe configs of %v: %w", topics, err)
	}
	out := make(map[string]int, len(topics))
	var errs []error
	for _, r := range resp.Resources {
		if r.Error != nil {
			errs = append(errs, fmt.Errorf("describe config of topic %s: %w", r.ResourceName, r.Error))
			continue
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName != "max.message.bytes" {
				continue
			}
			n, err := strconv.Atoi(e.ConfigValue)
			if err != nil || n <= batchOverhead {
				errs = append(errs, fmt.Errorf("topic %s: max.message.bytes %q unusable", r.ResourceName, e.ConfigValue))
				continue
			}
			out[r.ResourceName] = n
		}
	}
	for _, t := range topics {
		if _, ok := out[t]; !ok && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("topic %s: no max.message.bytes reported", t))
		}
	}
	return out, errors.Join(errs...)
}

// MaxMessageBytes returns the message size limit of a service writing to
// topics: the smaller of configured (<= 0: DefaultMaxMessageBytes) and the
// smallest max.message.bytes the cluster reports for them. When the cluster
// cannot say (err non-nil, for the caller to log), it is configured alone.
func MaxMessageBytes(ctx context.Context, brokers []string, sec kafkasec.Conn, configured int, topics ...string) (int, error) {
	limit := configured
	if limit <= 0 {
		limit = DefaultMaxMessageBytes
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := TopicMaxMessageBytes(ctx, brokers, sec, topics...)
	for _, n := range got {
		limit = min(limit, n)
	}
	return limit, err
}

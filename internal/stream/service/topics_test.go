package service_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestTopicsCreatedWithConfigs starts a service against an empty broker and
// reads back the configuration of the topics it created. It catches topics
// created with the broker's defaults although docs/operating.md promises
// compacted outputs, and a --retention flag that does not reach the topics.
func TestTopicsCreatedWithConfigs(t *testing.T) {
	brokers := streamtest.StartBroker(t, 1)
	k := service.DefaultKafka()
	k.Brokers = cli.StringList(brokers)
	k.Retention = 36 * time.Hour
	k.AnnotationsRetention = 90 * 24 * time.Hour
	var stderr bytes.Buffer
	rt, err := service.Start(context.Background(), service.Env{Stdout: &stderr, Stderr: &stderr}, "test", k, service.DefaultTelemetry())
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	defer rt.Close()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	want := map[string]map[string]string{
		"bags":         {"cleanup.policy": "delete", "retention.ms": "129600000"},
		"bags-train":   {"cleanup.policy": "compact"},
		"annotations":  {"cleanup.policy": "compact,delete", "retention.ms": "7776000000"},
		"dead-letters": {"cleanup.policy": "delete", "retention.ms": "129600000"},
	}
	req := &kafka.DescribeConfigsRequest{}
	for topic := range want {
		req.Resources = append(req.Resources, kafka.DescribeConfigRequestResource{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
			ConfigNames: []string{"cleanup.policy", "retention.ms"}})
	}
	resp, err := cl.DescribeConfigs(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]string{}
	for _, r := range resp.Resources {
		if r.Error != nil {
			t.Fatalf("describe %s: %v", r.ResourceName, r.Error)
		}
		got[r.ResourceName] = map[string]string{}
		for _, e := range r.ConfigEntries {
			got[r.ResourceName][e.ConfigName] = e.ConfigValue
		}
	}
	for topic, cfg := range want {
		for k, v := range cfg {
			if got[topic][k] != v {
				t.Errorf("topic %s: %s = %q, want %q (all: %v)", topic, k, got[topic][k], v, got[topic])
			}
		}
	}
	if !strings.Contains(stderr.String(), "kafka connection checked") {
		t.Logf("stderr: %s", stderr.String())
	}
}

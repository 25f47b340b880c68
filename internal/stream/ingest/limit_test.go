package ingest

import (
	"context"
	"fmt"
	"testing"
)

// TestLimitLearntAtStart: with a configured limit of 2 MiB, the topics'
// max.message.bytes (1048588 in kfake, as in Kafka) is learnt by Start,
// before any publish; a Start under an ended context makes nothing, and
// the first publish asks again; a publisher never started whose first
// publish comes under an ended context (a client gone) still keeps the
// cluster's limit. Catches the limit asked under the first publish's
// context and the configured one kept for the life of the process (the
// broker then refuses what the publisher lets through).
func TestLimitLearntAtStart(t *testing.T) {
	const brokerLimit, configured = 1048588, 2 << 20
	newPub := func() *Publisher {
		p, _, _ := startPublisher(t, PublisherConfig{LabelFraction: 1, MaxMessageBytes: configured})
		if got := p.MaxMessageBytes(); got != configured {
			t.Fatalf("limit %d before the cluster is asked, want the configured %d", got, configured)
		}
		return p
	}
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	bag := [][]byte{fmt.Appendf(nil, goodBag, "limit-1")}

	started := newPub()
	if err := started.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := started.MaxMessageBytes(); got != brokerLimit {
		t.Errorf("started: limit %d, want the broker's %d", got, brokerLimit)
	}

	retried := newPub()
	if err := retried.Start(ended); err == nil {
		t.Error("Start under an ended context: no error")
	}
	if got := retried.MaxMessageBytes(); got != configured {
		t.Errorf("after a Start that could not ask: limit %d, want the configured %d until asked again", got, configured)
	}
	if _, _, err := retried.PublishRaw(t.Context(), bag); err != nil {
		t.Fatal(err)
	}
	if got := retried.MaxMessageBytes(); got != brokerLimit {
		t.Errorf("Start failed, then a publish: limit %d, want the broker's %d", got, brokerLimit)
	}

	lazy := newPub()
	_, _, _ = lazy.PublishRaw(ended, bag) // fails or not: the client is gone
	if got := lazy.MaxMessageBytes(); got != brokerLimit {
		t.Errorf("first publish under an ended context: limit %d kept, want the broker's %d", got, brokerLimit)
	}
}

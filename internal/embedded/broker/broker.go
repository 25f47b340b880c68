// Package broker starts an embedded Kafka-protocol broker (franz-go's kfake)
// on loopback for the demo and the tests, and creates topics explicitly on
// any cluster, embedded or real. Topics are always created with an explicit
// partition count: relying on auto-creation gives a different layout on
// every broker and hides misconfigured topic names.
package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Embedded is a running in-process Kafka-protocol cluster.
type Embedded struct {
	cluster *kfake.Cluster
}

// Options configure an embedded cluster.
type Options struct {
	// Port to listen on (loopback); 0 picks a free port.
	Port int
	// Topics are created at start with Partitions partitions each.
	Topics     []string
	Partitions int
}

// Start launches an embedded single-node cluster on 127.0.0.1.
func Start(o Options) (*Embedded, error) {
	if o.Partitions <= 0 {
		o.Partitions = 4
	}
	port := o.Port
	listen := func(network, _ string) (net.Listener, error) {
		// kfake listens on all interfaces by default; the embedded broker
		// is a development tool and must not be reachable from elsewhere.
		return net.Listen(network, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ListenFn(listen),
		kfake.DefaultNumPartitions(o.Partitions),
		// Short session timeouts let a killed consumer's partitions move to
		// a live member quickly (tests SIGKILL annotators).
		kfake.GroupMinSessionTimeout(500 * time.Millisecond),
	}
	if len(o.Topics) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(o.Partitions), o.Topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded broker: %w", err)
	}
	return &Embedded{cluster: c}, nil
}

// Addrs returns the bootstrap addresses of the cluster.
func (e *Embedded) Addrs() []string { return e.cluster.ListenAddrs() }

// Close stops the cluster; its data is lost.
func (e *Embedded) Close() { e.cluster.Close() }

// EnsureTopics creates the topics on the cluster reachable at brokers with the
// given partition count, leaving existing topics alone.
func EnsureTopics(ctx context.Context, brokers []string, partitions int, topics ...string) error {
	if len(brokers) == 0 {
		return errors.New("ensure topics: no broker address")
	}
	if partitions <= 0 {
		partitions = 1
	}
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
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

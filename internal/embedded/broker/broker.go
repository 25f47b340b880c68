// Package broker starts an embedded Kafka-protocol broker (franz-go's kfake)
// on loopback, for the demo, the tests and development tools. No production
// package imports it (internal/archtest checks that the service commands do
// not link it); topics on a real cluster are created by
// kafkaio.EnsureTopics.
package broker

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Embedded is a running in-process Kafka-protocol cluster.
type Embedded struct {
	opts Options
	dir  string // the segment files' directory, removed by Close
	// mu guards cluster, which Restart replaces.
	mu      sync.Mutex
	cluster *kfake.Cluster
}

// Options configure an embedded cluster.
type Options struct {
	// Port to listen on (loopback); 0 picks a free port.
	Port int
	// Topics are created at start with Partitions partitions each.
	Topics     []string
	Partitions int
	// TLS, when set, makes the listener TLS-only with this server
	// configuration.
	TLS *tls.Config
	// Users, when any, turn SASL on: only these users are served.
	Users []User
}

// User is a SASL identity of the embedded broker.
type User struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism, Name, Password string
}

// Start launches an embedded single-node cluster on 127.0.0.1.
func Start(o Options) (*Embedded, error) {
	if o.Partitions <= 0 {
		o.Partitions = 4
	}
	// kfake keeps every partition's records only in segment files, by
	// default in an in-memory file system whose buffers grow by
	// allocating twice the size and copying: each doubling of a busy
	// partition's file (to 32 or 64 MiB) held the broker's single
	// request loop for about 40 ms, every produce and fetch waiting
	// behind it (an execution trace of BenchmarkPipeline found it in
	// kfake's memFile.Write: those stalls were the p99 latency at a tenth
	// and half of the rate), and the copies were a sixth of the
	// pipeline's CPU. Real files in a temporary directory append through
	// the kernel instead; nothing is synced, and Close removes them.
	// kfake also keeps its topics, group offsets and producer ids there,
	// which Restart relies on.
	dir, err := os.MkdirTemp("", "mimlstream-broker-")
	if err != nil {
		return nil, fmt.Errorf("start embedded broker: %w", err)
	}
	c, err := newCluster(o, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start embedded broker: %w", err)
	}
	return &Embedded{opts: o, dir: dir, cluster: c}, nil
}

// newCluster starts a kfake cluster for o whose data lives in dir (loaded
// from it when it holds a cluster's data already).
func newCluster(o Options, dir string) (*kfake.Cluster, error) {
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
		kfake.DataDir(dir),
	}
	if len(o.Topics) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(o.Partitions), o.Topics...))
	}
	if o.TLS != nil {
		opts = append(opts, kfake.TLS(o.TLS))
	}
	if len(o.Users) > 0 {
		opts = append(opts, kfake.EnableSASL())
		for _, u := range o.Users {
			opts = append(opts, kfake.Superuser(u.Mechanism, u.Name, u.Password))
		}
	}
	return kfake.NewCluster(opts...)
}

// Restart stops the cluster as a broker shuts down, keeping its data (kfake
// writes its records, topics, committed offsets and groups to its
// directory on the way down), waits down, and starts it again on the same
// address from that data: the clients' connections close, the address
// refuses them meanwhile, and then they find the topics, records and
// committed offsets as they left them, as after a broker's restart.
func (e *Embedded) Restart(down time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, p, err := net.SplitHostPort(e.cluster.ListenAddrs()[0])
	if err != nil {
		return fmt.Errorf("restart embedded broker: %w", err)
	}
	o := e.opts
	if o.Port, err = strconv.Atoi(p); err != nil {
		return fmt.Errorf("restart embedded broker: %w", err)
	}
	e.cluster.Close()
	time.Sleep(down)
	// The port may linger a moment after the listener closed.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c, err := newCluster(o, e.dir)
		if err == nil {
			e.cluster = c
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("restart embedded broker on port %d: %w", o.Port, err)
		}
	}
}

// Addrs returns the bootstrap addresses of the cluster.
func (e *Embedded) Addrs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cluster.ListenAddrs()
}

// Close stops the cluster and removes its segment files: its data is lost.
func (e *Embedded) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cluster.Close()
	_ = os.RemoveAll(e.dir)
}

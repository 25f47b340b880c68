// Package kafkatest starts real Apache Kafka for tests: KRaft nodes
// (combined broker and controller) on loopback ports, from the broker's own
// jars, which Maven resolves from Maven Central through the small pom in
// deploy/kafka and which are cached per version between runs.
//
// Each node is a JVM with a bounded heap, its log in the test's temp dir,
// readiness checked through the Kafka protocol (every node registered in the
// cluster's metadata), and a clean shutdown when the test ends, failed or
// not: SIGTERM, then SIGKILL after a grace period. The JVMs also get
// SIGKILL from the kernel if the test process itself dies (Pdeathsig), so a
// test binary killed by its timeout leaves no broker behind.
//
// Nothing here imitates Kafka: it is what the project's users run. The
// zero-dependency embedded broker (internal/embedded/broker) stays what the
// quick tests and `make demo` use.
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/testsupport/realpart"
)

// The Apache Kafka versions the real-broker suite runs on: the newest 4.x
// and the newest 3.9.x that Maven Central serves. Versions lists them in
// the order the suite runs them.
const (
	Kafka4  = "4.4.0"
	Kafka39 = "3.9.2"
)

// Versions are the tested versions, newest first.
func Versions() []string { return []string{Kafka4, Kafka39} }

// VersionEnv, when set, restricts the suite to the comma-separated versions
// it names (e.g. MIMLSTREAM_KAFKA_VERSIONS=3.9.2).
const VersionEnv = "MIMLSTREAM_KAFKA_VERSIONS"

// CacheEnv overrides where resolved jars are kept
// (default: the user cache dir, mimlstream/kafka/<version>).
const CacheEnv = "MIMLSTREAM_KAFKA_CACHE"

// Selected returns the versions to test: Versions, or those VersionEnv names.
func Selected() []string {
	v := os.Getenv(VersionEnv)
	if v == "" {
		return Versions()
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Missing names the tools the real-broker suite needs that this machine
// lacks ("" when java and mvn are both on PATH).
func Missing() string {
	var miss []string
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			miss = append(miss, tool)
		}
	}
	return strings.Join(miss, " and ")
}

// Require stops the test when the real broker cannot run here: under
// CI=true it fails (a green CI must have run the suite), elsewhere it skips.
func Require(t testing.TB) {
	t.Helper()
	if miss := Missing(); miss != "" {
		realpart.Missing(t, "%s not found: the real-Kafka suite cannot run (it needs Java 17+ and Maven)", miss)
	}
}

// User is a SCRAM-SHA-512 credential stored by the broker.
type User struct{ Name, Password string }

// TLS is the server side of a SASL_SSL listener: a certificate and its
// PKCS#8 key, as PEM files.
type TLS struct{ CertFile, KeyFile string }

// Options shape a cluster.
type Options struct {
	// Version is the Apache Kafka version (default Kafka4).
	Version string
	// Nodes is the number of combined broker+controller nodes (default 1).
	// Internal topics get replication factor min(Nodes, 3), and with three
	// or more nodes min.insync.replicas is 2.
	Nodes int
	// Partitions is num.partitions for topics created without a count
	// (default 4).
	Partitions int
	// HeapMB bounds each JVM's heap (default 512).
	HeapMB int
	// Users are SCRAM-SHA-512 users, written at format time the way an
	// operator does (kafka-storage format --add-scram). With TLS they
	// enable a SASL_SSL listener beside the plaintext one.
	Users []User
	TLS   *TLS
	// Props are extra server properties, applied last.
	Props map[string]string
}

// Cluster is a running set of nodes.
type Cluster struct {
	t         testing.TB
	opts      Options
	libs      string
	clusterID string
	voters    string
	nodes     []*Node
}

// Node is one KRaft process.
type Node struct {
	ID                  int
	Port, Controller    int
	SecurePort          int // 0 without a SASL_SSL listener
	dir, props, logFile string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start formats and starts a cluster and waits until every node is
// registered; the cluster is shut down when the test ends.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	Require(t)
	if o.Version == "" {
		o.Version = Kafka4
	}
	o.Nodes = max(o.Nodes, 1)
	if o.Partitions <= 0 {
		o.Partitions = 4
	}
	if o.HeapMB <= 0 {
		o.HeapMB = 512
	}
	libs, err := Jars(context.Background(), o.Version)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, opts: o, libs: libs, clusterID: newClusterID()}
	root := t.TempDir()
	var voters []string
	for i := range o.Nodes {
		n := &Node{ID: i + 1, Port: freePort(t), Controller: freePort(t), dir: filepath.Join(root, fmt.Sprintf("node%d", i+1))}
		if o.TLS != nil {
			n.SecurePort = freePort(t)
		}
		n.props = filepath.Join(n.dir, "server.properties")
		n.logFile = filepath.Join(n.dir, "kafka.log")
		c.nodes = append(c.nodes, n)
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", n.ID, n.Controller))
	}
	c.voters = strings.Join(voters, ",")
	t.Cleanup(c.Close)
	begin := time.Now()
	for _, n := range c.nodes {
		if err := c.format(n); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.nodes {
		if err := c.launch(i); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx, o.Nodes); err != nil {
		t.Fatalf("Apache Kafka %s: %v\n%s", o.Version, err, c.Logs())
	}
	t.Logf("Apache Kafka %s: %d KRaft node(s) ready in %.1f s (heap %d MiB each, logs in %s)",
		o.Version, o.Nodes, time.Since(begin).Seconds(), o.HeapMB, root)
	return c
}

// Version is the cluster's Apache Kafka version.
func (c *Cluster) Version() string { return c.opts.Version }

// Nodes returns the cluster's nodes, in node-id order.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Addrs are the plaintext listeners of every node.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = "127.0.0.1:" + strconv.Itoa(n.Port)
	}
	return out
}

// SecureAddrs are the SASL_SSL listeners (nil without TLS).
func (c *Cluster) SecureAddrs() []string {
	if c.opts.TLS == nil {
		return nil
	}
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = "127.0.0.1:" + strconv.Itoa(n.SecurePort)
	}
	return out
}

// NodeByID returns the node with a broker id, or nil.
func (c *Cluster) NodeByID(id int) *Node {
	for _, n := range c.nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

func (c *Cluster) serverProps(n *Node) string {
	o := c.opts
	rf := min(o.Nodes, 3)
	minISR := 1
	if o.Nodes >= 3 {
		minISR = 2
	}
	listeners := []string{fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", n.Port), fmt.Sprintf("CONTROLLER://127.0.0.1:%d", n.Controller)}
	advertised := []string{fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", n.Port)}
	protocols := "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
	p := [][2]string{
		{"process.roles", "broker,controller"},
		{"node.id", strconv.Itoa(n.ID)},
		{"controller.quorum.voters", c.voters},
		{"controller.listener.names", "CONTROLLER"},
		{"inter.broker.listener.name", "PLAINTEXT"},
		{"log.dirs", filepath.Join(n.dir, "data")},
		{"num.partitions", strconv.Itoa(o.Partitions)},
		{"default.replication.factor", strconv.Itoa(rf)},
		{"min.insync.replicas", strconv.Itoa(minISR)},
		// Internal topics sized for a test: 50 offsets partitions cost
		// seconds of leader elections on two cores.
		{"offsets.topic.replication.factor", strconv.Itoa(rf)},
		{"offsets.topic.num.partitions", "4"},
		{"transaction.state.log.replication.factor", strconv.Itoa(rf)},
		{"transaction.state.log.min.isr", strconv.Itoa(minISR)},
		{"share.coordinator.state.topic.replication.factor", strconv.Itoa(rf)},
		{"share.coordinator.state.topic.min.isr", strconv.Itoa(minISR)},
		{"group.initial.rebalance.delay.ms", "0"},
		// The services create their topics with explicit partitions and
		// configs; a topic that appears by itself would hide a bug.
		{"auto.create.topics.enable", "false"},
		{"unclean.leader.election.enable", "false"},
	}
	if o.TLS != nil {
		listeners = append(listeners, fmt.Sprintf("SASL_SSL://127.0.0.1:%d", n.SecurePort))
		advertised = append(advertised, fmt.Sprintf("SASL_SSL://127.0.0.1:%d", n.SecurePort))
		protocols += ",SASL_SSL:SASL_SSL"
		p = append(p,
			[2]string{"sasl.enabled.mechanisms", "SCRAM-SHA-512"},
			[2]string{"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required;"},
			[2]string{"ssl.keystore.type", "PEM"},
			[2]string{"ssl.keystore.location", filepath.Join(n.dir, "keystore.pem")},
		)
	}
	p = append(p,
		[2]string{"listeners", strings.Join(listeners, ",")},
		[2]string{"advertised.listeners", strings.Join(advertised, ",")},
		[2]string{"listener.security.protocol.map", protocols},
	)
	for k, v := range o.Props {
		p = append(p, [2]string{k, v})
	}
	var b strings.Builder
	for _, kv := range p {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	return b.String()
}

// log4j2 writes the broker's log to standard output, which the node's log
// file receives; INFO is what an operator reads when a test fails.
const log4j2 = `status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.state.name = state.change.logger
logger.state.level = warn
logger.request.name = kafka.request.logger
logger.request.level = warn
`

func (c *Cluster) format(n *Node) error {
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(n.props, []byte(c.serverProps(n)), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.dir, "log4j2.properties"), []byte(log4j2), 0o600); err != nil {
		return err
	}
	if t := c.opts.TLS; t != nil {
		// Kafka's PEM key store: the PKCS#8 key, then the certificate chain.
		key, err := os.ReadFile(t.KeyFile)
		if err != nil {
			return err
		}
		cert, err := os.ReadFile(t.CertFile)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(n.dir, "keystore.pem"), append(key, cert...), 0o600); err != nil {
			return err
		}
	}
	args := []string{"kafka.tools.StorageTool", "format", "--ignore-formatted", "-t", c.clusterID, "-c", n.props}
	for _, u := range c.opts.Users {
		args = append(args, "--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", u.Name, u.Password))
	}
	cmd := c.java(n, 256, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kafka-storage format (node %d, %s): %w\n%s", n.ID, c.opts.Version, err, out)
	}
	return nil
}

// java is a JVM on the broker's classpath with a bounded heap.
func (c *Cluster) java(n *Node, heapMB int, args ...string) *exec.Cmd {
	jvm := []string{
		fmt.Sprintf("-Xmx%dm", heapMB), fmt.Sprintf("-Xms%dm", min(heapMB, 128)),
		"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(n.dir, "log4j2.properties"),
		"-Dkafka.logs.dir=" + n.dir,
		"-cp", filepath.Join(c.libs, "*"),
	}
	cmd := exec.Command("java", append(jvm, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	return cmd
}

// launch starts node i's JVM (formatted before); it returns once the
// process runs, not when it serves.
func (c *Cluster) launch(i int) error {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("node %d already running", n.ID)
	}
	logf, err := os.OpenFile(n.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := c.java(n, c.opts.HeapMB, "kafka.Kafka", n.props)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start node %d: %w", n.ID, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	n.cmd, n.done = cmd, done
	return nil
}

// Running reports whether node i's process is alive.
func (c *Cluster) Running(i int) bool {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to node i and waits for it to die: a crash, with
// nothing flushed.
func (c *Cluster) Kill(i int) { c.stop(i, syscall.SIGKILL, 0) }

// Stop sends SIGTERM to node i and waits for a controlled shutdown (up to
// 30 s, then SIGKILL).
func (c *Cluster) Stop(i int) { c.stop(i, syscall.SIGTERM, 30*time.Second) }

func (c *Cluster) stop(i int, sig syscall.Signal, grace time.Duration) {
	n := c.nodes[i]
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd, n.done = nil, nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	if grace > 0 {
		select {
		case <-done:
			return
		case <-time.After(grace):
			c.t.Logf("node %d did not stop within %v of %v; killing it", n.ID, grace, sig)
		}
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart starts node i again on its data, after Kill or Stop.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if err := c.launch(i); err != nil {
		c.t.Fatal(err)
	}
}

// Close stops every node (SIGTERM with a short grace, then SIGKILL).
func (c *Cluster) Close() {
	var wg sync.WaitGroup
	for i := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.stop(i, syscall.SIGTERM, 15*time.Second)
		}()
	}
	wg.Wait()
	if c.t.Failed() {
		c.t.Logf("--- Apache Kafka %s logs (tails) ---\n%s", c.opts.Version, c.Logs())
	}
}

// Logs returns the tail of every node's log.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, n := range c.nodes {
		data, _ := os.ReadFile(n.logFile)
		if len(data) > 6000 {
			data = data[len(data)-6000:]
		}
		fmt.Fprintf(&b, "--- node %d (%s) ---\n%s\n", n.ID, n.logFile, data)
	}
	return b.String()
}

// WaitReady waits until the cluster's metadata, asked of a running node
// through the Kafka protocol, lists want brokers.
func (c *Cluster) WaitReady(ctx context.Context, want int) error {
	var last error
	for {
		for i, n := range c.nodes {
			if !c.Running(i) {
				continue
			}
			// A Transport of its own: the default one caches metadata
			// that the caller's clients would then read stale.
			tr := &kafka.Transport{}
			cl := &kafka.Client{Addr: kafka.TCP("127.0.0.1:" + strconv.Itoa(n.Port)), Timeout: 3 * time.Second, Transport: tr}
			md, err := cl.Metadata(ctx, &kafka.MetadataRequest{})
			tr.CloseIdleConnections()
			if err != nil {
				last = err
				continue
			}
			if len(md.Brokers) >= want {
				return nil
			}
			last = fmt.Errorf("%d of %d brokers registered", len(md.Brokers), want)
		}
		if !c.anyRunning() {
			return errors.New("every node's process has exited")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last: %v)", ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (c *Cluster) anyRunning() bool {
	for i := range c.nodes {
		if c.Running(i) {
			return true
		}
	}
	return false
}

// newClusterID is what kafka-storage random-uuid prints: 16 random bytes,
// base64url without padding, drawn again when it would start with '-'
// (as Kafka's Uuid.randomUuid does): kafka-storage's argument parser reads
// "-t -abc..." as a missing value and a flag, and one format in 64 failed.
func newClusterID() string {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:])
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id
		}
	}
}

// freePort returns a loopback port that is free now, chosen below the
// kernel's ephemeral range (32768 and up on Linux): the JVM binds it
// seconds later, and a port from that range could meanwhile be handed to
// another test's listener on port 0.
func freePort(t testing.TB) int {
	t.Helper()
	for range 1000 {
		port := 20000 + mrand.IntN(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	t.Fatal("kafkatest: no free port between 20000 and 32000")
	return 0
}

// Package redistest starts real Redis servers for tests: a three-node Redis
// Cluster on loopback, made by redis-server and redis-cli as an operator
// would, so that cluster behaviour (slots, hash tags, MOVED redirects,
// transactions across one slot) is tested against Redis itself.
package redistest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/testsupport/realpart"
)

// StartCluster starts three cluster-enabled redis-server processes on free
// loopback ports, joins them with `redis-cli --cluster create` (no
// replicas) and waits until the cluster answers ok. When redis-server or
// redis-cli is not installed the test stops (realpart.Missing: it fails
// under CI=true, is skipped elsewhere); the servers are killed at cleanup. It returns the node addresses.
func StartCluster(t testing.TB) []string {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		realpart.Missing(t, "redis-server is not installed (apt-get install redis-server)")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		realpart.Missing(t, "redis-cli is not installed (apt-get install redis-tools)")
	}
	dir := t.TempDir()
	var addrs []string
	for i := range 3 {
		port := freePort(t)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		nodeDir := filepath.Join(dir, strconv.Itoa(i))
		cmd := exec.Command(server,
			"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(nodeDir+"-nodes.conf"),
			"--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no", "--dir", dir,
			"--daemonize", "no", "--logfile", filepath.Join(nodeDir+".log"))
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		waitPing(t, addr)
		addrs = append(addrs, addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, a := range addrs {
		for {
			out, _ := exec.Command(cli, "-h", "127.0.0.1", "-p", portOf(a), "cluster", "info").Output()
			if bytes.Contains(out, []byte("cluster_state:ok")) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster node %s not ok after 20 s: %s", a, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The cluster must also be usable through go-redis: every node agrees
	// on the slot map once a client can read and write a key in each
	// node's slots.
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer c.Close()
	ctx := context.Background()
	for i := range 30 {
		k := fmt.Sprintf("redistest:probe:%d", i)
		for {
			err := c.Set(ctx, k, "1", time.Minute).Err()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster not writable: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return addrs
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitPing(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_, _ = conn.Write([]byte("PING\r\n"))
			buf := make([]byte, 16)
			_ = conn.SetReadDeadline(time.Now().Add(time.Second))
			n, _ := conn.Read(buf)
			conn.Close()
			if strings.HasPrefix(string(buf[:n]), "+PONG") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis %s did not answer PING: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

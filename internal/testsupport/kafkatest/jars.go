package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Jars returns a folder holding Apache Kafka version's broker jars and
// their dependencies, resolving them with Maven from deploy/kafka/pom.xml
// the first time and caching them: under CacheEnv, or the user cache dir.
// Concurrent test binaries share the cache behind a file lock, and a
// resolution that fails leaves nothing behind that looks complete.
func Jars(ctx context.Context, version string) (string, error) {
	base := os.Getenv(CacheEnv)
	if base == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("kafka jars: %w (set %s)", err, CacheEnv)
		}
		base = filepath.Join(dir, "mimlstream", "kafka")
	}
	dir := filepath.Join(base, version)
	done := filepath.Join(dir, ".complete")
	if _, err := os.Stat(done); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(base, version+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("kafka jars: lock: %w", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := os.Stat(done); err == nil {
		return dir, nil // another process resolved them while we waited
	}
	pom, err := findPom()
	if err != nil {
		return "", err
	}
	tmp := dir + ".partial"
	_ = os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-Dstyle.color=never", "-f", pom, "dependency:copy-dependencies",
		"-Dkafka.version="+version, "-DoutputDirectory="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("resolve Apache Kafka %s with Maven (%s): %w\n%s", version, pom, err, out)
	}
	if _, err := os.Stat(filepath.Join(tmp, "kafka_2.13-"+version+".jar")); err != nil {
		return "", fmt.Errorf("resolve Apache Kafka %s: no broker jar after Maven ran: %w", version, err)
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, os.WriteFile(done, []byte(version+"\n"), 0o644)
}

// findPom finds deploy/kafka/pom.xml above the working directory (a test
// runs in its package's folder inside the repository).
func findPom() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "deploy", "kafka", "pom.xml")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kafka jars: deploy/kafka/pom.xml not found above the working directory")
		}
		dir = parent
	}
}

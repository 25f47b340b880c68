package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

// cacheDoc is the document the feature cache tests send.
const cacheDoc = "The shuttle's launch was delayed: engineers found a crack in a fuel line. Cafés nearby stayed open."

// writeDocManifest writes a one-document manifest of cacheDoc under id
// into dir and returns its path.
func writeDocManifest(t *testing.T, dir, id string) string {
	t.Helper()
	line, err := json.Marshal(map[string]any{"id": id, "text": cacheDoc, "labels": []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(manifest, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return manifest
}

// TestFeatureCacheWithPasswordFromFile: the feature cache on a real
// redis-server that requires a password, given by
// --feature-cache-redis-password-file: a document sent twice (under two
// ids) is featurized once. Between the runs the test marks the cached
// features; the second bag carries the mark, so it came from the cache
// behind the password. Fails under CI=true without redis-server.
func TestFeatureCacheWithPasswordFromFile(t *testing.T) {
	const password = "cache-right-password"
	addr := redistest.StartPasswordRedis(t, password)
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "redis-password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password})
	defer rdb.Close()
	const prefix = "ingest-auth"
	cache := featurecache.New(rdb, prefix, time.Hour, 100)
	brokers, topics := startCluster(t)
	f, sha := defaultTextFeaturizer().Identity(), media.Identify([]byte(cacheDoc), "", "").SHA256
	const mark = 12345.5
	ctx := context.Background()
	var logs bytes.Buffer
	for run, id := range []string{"doc-first", "doc-again"} {
		var stdout, stderr bytes.Buffer
		args := []string{"--brokers", strings.Join(brokers, ","), "--data", writeDocManifest(t, dir, id), "--progress=false",
			"--feature-cache-redis", addr, "--feature-cache-redis-password-file", pwFile, "--cache-prefix", prefix}
		err := Command(ctx, service.Env{Stdout: &stdout, Stderr: &stderr}, args)
		logs.Write(stderr.Bytes())
		if err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, stderr.String())
		}
		e, ok, err := featurecache.GetMedia(ctx, cache, f, sha)
		if err != nil || !ok {
			t.Fatalf("run %d: not in the cache under its featurizer and hash: %v %v", run, ok, err)
		}
		if run == 0 {
			e.Sparse[0].Val[0] = mark
			if err := featurecache.PutMedia(ctx, cache, f, sha, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	v, _ := wire.NewValidator(0)
	var vals []float64
	for _, raw := range readTopic(t, brokers, topics.Annotate, 2) {
		m, err := v.DecodeBag(raw)
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, m.SparseInstances[0].Val[0])
	}
	t.Logf("first value of the first passage: %v, then %v (mark %v)", vals[0], vals[1], mark)
	if vals[0] == mark || vals[1] != mark {
		t.Errorf("first value %v then %v; want the second from the marked cache entry (%v): featurized again", vals[0], vals[1], mark)
	}
	if !strings.Contains(logs.String(), "redis connected") {
		t.Errorf("no connection to the feature cache's Redis logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the logs carry the password:\n%s", logs.String())
	}
}

// TestFeatureCacheRefusedCredentialsEndTheStart: a feature cache Redis
// that refuses the credentials (a wrong password from the file flag or
// from the environment variable, none at all) ends ingest at start, at
// once, with an error wrapping redisflag.ErrAuth and exit status 1,
// instead of waiting for Redis; the password appears in no error nor log
// line. Fails under CI=true without redis-server.
func TestFeatureCacheRefusedCredentialsEndTheStart(t *testing.T) {
	const wrong = "cache-wrong-password"
	addr := redistest.StartPasswordRedis(t, "cache-right-password")
	brokers, _ := startCluster(t)
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "redis-password")
	if err := os.WriteFile(pwFile, []byte(wrong+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	manifest := writeDocManifest(t, dir, "doc")
	base := []string{"--brokers", strings.Join(brokers, ","), "--data", manifest, "--progress=false", "--feature-cache-redis", addr}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"wrong password file", []string{"--feature-cache-redis-password-file", pwFile}, nil},
		{"wrong password from the environment", nil, map[string]string{"MIMLSTREAM_INGEST_FEATURE_CACHE_REDIS_PASSWORD": wrong}},
		{"no password", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			start := time.Now()
			err := Command(ctx, service.Env{Stdout: &stdout, Stderr: &stderr}, append(append([]string{}, base...), tc.args...))
			took := time.Since(start)
			code := cli.ExitCode("ingest", &stderr, err)
			t.Logf("exit %d after %v: %v", code, took.Round(time.Millisecond), err)
			if !errors.Is(err, redisflag.ErrAuth) || code != cli.ExitFailure || took > 5*time.Second {
				t.Fatalf("exit %d after %v: %v; want redisflag.ErrAuth, exit 1, at once", code, took, err)
			}
			if !strings.Contains(err.Error(), "--feature-cache-redis-password") {
				t.Errorf("the error does not name the feature cache's password flags: %v", err)
			}
			if stderr.Len() == 0 {
				t.Fatal("nothing logged: the check for the password below would prove nothing")
			}
			for what, s := range map[string]string{"error": err.Error(), "log": stderr.String(), "stdout": stdout.String()} {
				if strings.Contains(s, wrong) {
					t.Errorf("the %s carries the password: %s", what, s)
				}
			}
		})
	}
}

// TestFeatureCacheSettingsNeedTheAddress: a feature cache setting given
// without --feature-cache-redis (a password file from the environment,
// the address forgotten) is a usage error naming both flags, before Kafka
// is dialled, not a cache silently left off.
func TestFeatureCacheSettingsNeedTheAddress(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MIMLSTREAM_INGEST_FEATURE_CACHE_REDIS_PASSWORD_FILE", pwFile)
	var stdout, stderr bytes.Buffer
	// Nothing listens on port 1: reaching Kafka would fail differently.
	err := Command(context.Background(), service.Env{Stdout: &stdout, Stderr: &stderr},
		[]string{"--brokers", "127.0.0.1:1", "--jsonl", "-", "--progress=false"})
	if code := cli.ExitCode("ingest", &stderr, err); code != cli.ExitUsage ||
		!strings.Contains(err.Error(), "--feature-cache-redis-password-file is given without --feature-cache-redis") {
		t.Fatalf("exit %d: %v; want a usage error naming --feature-cache-redis-password-file and --feature-cache-redis", code, err)
	}
}

package annotate

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestCacheRedisCredentials: the feature cache's own Redis takes its
// password from --cache-redis-password-file as the registry's does; the
// right one starts the annotator, a wrong one or none ends New at once
// with redisflag.ErrAuth naming the cache's flags, and the password is in
// no error or log line.
func TestCacheRedisCredentials(t *testing.T) {
	const right, wrong = "cache-right-password", "cache-wrong-password"
	cacheAddr := redistest.StartPasswordRedis(t, right)
	brokers := streamtest.StartBroker(t, 1, wire.DefaultTopics().All()...)
	regAddr, regRdb, _ := streamtest.StartRedis(t)
	ds := streamtest.SmallDataset(4)
	streamtest.PublishModel(t, featurestore.NewRegistry(regRdb, "mimlstream:models"), ds, nil)
	kinds := models.NewRegistry(streamtest.CentroidKind())
	dir := t.TempDir()
	for _, tc := range []struct {
		name, password string // "": no password file
		ok             bool
	}{
		{"right password", right, true},
		{"wrong password", wrong, false},
		{"no password", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Kafka.Brokers, cfg.Redis.Addr, cfg.CacheRedis.Addr, cfg.Listen = brokers, regAddr, cacheAddr, "127.0.0.1:0"
			if tc.password != "" {
				cfg.CacheRedis.PasswordFile = filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
				if err := os.WriteFile(cfg.CacheRedis.PasswordFile, []byte(tc.password+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			s, err := New(ctx, service.Env{Stdout: &out, Stderr: &out}, kinds, cfg)
			took := time.Since(start)
			t.Logf("%v after %v", err, took.Round(time.Millisecond))
			if s != nil {
				s.Close()
			}
			if tc.ok {
				if err != nil {
					t.Fatalf("%v\n%s", err, out.String())
				}
				return
			}
			if !errors.Is(err, redisflag.ErrAuth) || took > 5*time.Second {
				t.Fatalf("%v after %v; want redisflag.ErrAuth at once", err, took)
			}
			if !strings.Contains(err.Error(), "--cache-redis-password") {
				t.Errorf("the error does not name the cache's password flags: %v", err)
			}
			if out.Len() == 0 {
				t.Fatal("nothing logged: the check for the password below would prove nothing")
			}
			for what, s := range map[string]string{"error": err.Error(), "log": out.String()} {
				if strings.Contains(s, wrong) || strings.Contains(s, right) {
					t.Errorf("the %s carries a password: %s", what, s)
				}
			}
		})
	}
}

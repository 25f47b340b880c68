package redistest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestStartPasswordRedis: the server it starts refuses a client without
// the password or with another one, and answers one with it.
func TestStartPasswordRedis(t *testing.T) {
	addr := StartPasswordRedis(t, "the-password")
	for _, tc := range []struct {
		name, pw, refusal string
	}{
		{"no password", "", "NOAUTH"},
		{"wrong password", "other", "WRONGPASS"},
		{"right password", "the-password", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			rdb := redis.NewClient(&redis.Options{Addr: addr, Password: tc.pw, MaxRetries: -1})
			defer rdb.Close()
			err := rdb.Ping(ctx).Err()
			if tc.refusal == "" && err != nil {
				t.Fatalf("PING with the password: %v", err)
			}
			if tc.refusal != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.refusal)) {
				t.Fatalf("PING: %v, want %s", err, tc.refusal)
			}
		})
	}
}

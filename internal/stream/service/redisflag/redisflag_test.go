package redisflag

import (
	"testing"

	"github.com/mimlstream/mimlstream/internal/featurestore"
)

func TestRedisOptions(t *testing.T) {
	cases := []struct {
		in   Config
		want featurestore.Options
	}{
		{Config{Addr: "h:1", Password: "p", DB: 3}, featurestore.Options{Addr: "h:1", Password: "p", DB: 3}},
		{Config{Addr: "redis://u:pw@h:6380/2"}, featurestore.Options{Addr: "h:6380", Username: "u", Password: "pw", DB: 2}},
		{Config{Addr: "rediss://h:6380"}, featurestore.Options{Addr: "h:6380", TLS: true}},
		{Config{Addr: "redis://h:6380", Password: "flag"}, featurestore.Options{Addr: "h:6380", Password: "flag"}},
		{Config{Addr: "redis://h:6380", DB: 4}, featurestore.Options{Addr: "h:6380", DB: 4}},
		{Config{Addr: "redis://h:6380/1", DB: 4}, featurestore.Options{Addr: "h:6380", DB: 1}},
	}
	for _, c := range cases {
		got, err := c.in.Options()
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.in.Addr, got, c.want)
		}
	}
	if _, err := (Config{Addr: "redis://h:x/y"}).Options(); err == nil {
		t.Error("bad URL accepted")
	}
}

package redistest

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestStartCluster: the three nodes form one cluster covering all 16384
// slots, and keys spread over more than one node.
func TestStartCluster(t *testing.T) {
	addrs := StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer c.Close()
	ctx := t.Context()
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	covered, nodes := 0, map[string]bool{}
	for _, s := range shards {
		for _, r := range s.Slots {
			covered += int(r.End-r.Start) + 1
		}
		if len(s.Slots) > 0 {
			nodes[s.Nodes[0].ID] = true
		}
	}
	if covered != 16384 || len(nodes) != 3 {
		t.Fatalf("slots covered %d by %d nodes, want 16384 by 3", covered, len(nodes))
	}
}

package kafkaio

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestKeyGateSerialisesSharedKeysOnly claims {a,b}, then {c} (disjoint:
// must not wait) and {b,c} (shares b and c: must wait for both releases).
// Catches a gate that lets two writes of one key overlap (a retried write
// could then land after a later one of its key) or that serialises writes
// of distinct keys (no pipelining at all).
func TestKeyGateSerialisesSharedKeysOnly(t *testing.T) {
	g := NewKeyGate()
	g.Claim([]string{"a", "b"})
	disjoint := make(chan struct{})
	go func() { g.Claim([]string{"c"}); close(disjoint) }()
	select {
	case <-disjoint:
	case <-time.After(5 * time.Second):
		t.Fatal("a claim of a free key waited")
	}
	var got atomic.Bool
	shared := make(chan struct{})
	go func() { g.Claim([]string{"b", "c", "c"}); got.Store(true); close(shared) }()
	time.Sleep(50 * time.Millisecond)
	if got.Load() {
		t.Fatal("a claim of held keys went through")
	}
	g.Release([]string{"a", "b"})
	time.Sleep(50 * time.Millisecond)
	if got.Load() {
		t.Fatal("a claim went through while one of its keys (c) was still held")
	}
	g.Release([]string{"c"})
	select {
	case <-shared:
	case <-time.After(5 * time.Second):
		t.Fatal("the claim did not go through once its keys were released")
	}
	g.Release([]string{"b", "c", "c"})
	if n := g.Held(); n != 0 {
		t.Fatalf("%d keys held after every release", n)
	}
}

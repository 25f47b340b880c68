package kafkaio

import (
	"slices"
	"sync"
)

// KeyGate keeps the writes of one key in order when several writes are in
// flight: a write claims its keys before it starts and waits while an
// earlier write in flight holds any of them. Writes of distinct keys
// overlap freely; two writes of one key never do, so a retried write can
// never land after a later one of its key. Claims must be made in the
// order the writes are meant to land. It is safe for concurrent use.
type KeyGate struct {
	mu   sync.Mutex
	cond *sync.Cond
	held map[string]int
}

// NewKeyGate returns a gate holding no key.
func NewKeyGate() *KeyGate {
	g := &KeyGate{held: map[string]int{}}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Claim waits until no write in flight holds any of keys, then holds them
// for the caller until Release. Duplicates within keys are fine.
func (g *KeyGate) Claim(keys []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for slices.ContainsFunc(keys, func(k string) bool { return g.held[k] > 0 }) {
		g.cond.Wait()
	}
	for _, k := range keys {
		g.held[k]++
	}
}

// Release lets the writes waiting for keys go.
func (g *KeyGate) Release(keys []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range keys {
		if g.held[k]--; g.held[k] <= 0 {
			delete(g.held, k)
		}
	}
	g.cond.Broadcast()
}

// Held returns how many distinct keys are held.
func (g *KeyGate) Held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.held)
}

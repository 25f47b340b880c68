package ingest

import (
	"context"
	"sync"

	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
)

// flights publishes consecutive chunks of one stream with up to n in
// flight, each waiting for its own acknowledgements, so the produce round
// trips of a stream overlap instead of adding up. Chunks sharing a key
// never overlap (a KeyGate), so a key's records land in stream order even
// when a write is retried.
type flights struct {
	sem  chan struct{}
	gate *kafkaio.KeyGate
	wg   sync.WaitGroup

	mu  sync.Mutex
	err error
}

func newFlights(n int) *flights {
	return &flights{sem: make(chan struct{}, max(1, n)), gate: kafkaio.NewKeyGate()}
}

// Go starts publish once a slot is free and no chunk in flight holds any
// of keys. It returns, without starting publish, the first error of an
// earlier chunk, or ctx's error.
func (f *flights) Go(ctx context.Context, keys []string, publish func() error) error {
	if err := f.Err(); err != nil {
		return err
	}
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	f.gate.Claim(keys)
	f.wg.Go(func() {
		defer func() {
			f.gate.Release(keys)
			<-f.sem
		}()
		if err := publish(); err != nil {
			f.mu.Lock()
			if f.err == nil {
				f.err = err
			}
			f.mu.Unlock()
		}
	})
	return nil
}

// Err returns the first error of a chunk so far.
func (f *flights) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Wait waits for the chunks in flight and returns the first error.
func (f *flights) Wait() error {
	f.wg.Wait()
	return f.Err()
}

// inOrder reports the progress of chunks completing in any order as the
// end of the longest completed prefix.
type inOrder struct {
	mu    sync.Mutex
	done  int
	ready map[int]int // start -> end of completed chunks beyond done
	fn    func(int)
}

func newInOrder(fn func(int)) *inOrder { return &inOrder{ready: map[int]int{}, fn: fn} }

// complete records that the chunk [start, end) is done.
func (p *inOrder) complete(start, end int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ready[start] = end
	moved := false
	for {
		e, ok := p.ready[p.done]
		if !ok {
			break
		}
		delete(p.ready, p.done)
		p.done, moved = e, true
	}
	if moved && p.fn != nil {
		p.fn(p.done)
	}
}

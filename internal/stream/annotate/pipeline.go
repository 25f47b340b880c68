package annotate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
)

// The consume loop is a pipeline with up to MaxInFlight batches between
// their fetch and the acknowledgement of their outputs:
//
//	fetch ──► batches ──► process (one batch at a time, Workers in parallel)
//	                        │ key guard
//	                        ▼
//	                      write (MaxInFlight writers, each waits for its acks)
//	                        │ acknowledged
//	                        ▼
//	                      offset tracker ──► commit every CommitInterval
//
// Fetching, annotating and producing overlap, and a produce round trip no
// longer idles the workers. What keeps the guarantees:
//   - at-least-once: an offset is committed only when every message before
//     it in its partition has its outputs acknowledged (kafkaio.OffsetTracker),
//     whatever order the writers finish in;
//   - per-key order: a batch holding a key that an unacknowledged batch also
//     holds waits for it before it is written, so the outputs of one key are
//     never written concurrently, even when a write is retried;
//   - one model per batch: processBatch takes one snapshot;
//   - graceful drain: a shutdown stops the fetching; the batches in flight
//     are completed, their offsets committed, within DrainTimeout.

// inflight is a batch between its fetch and its acknowledgement.
type inflight struct {
	msgs []kafka.Message
	outs []output
	keys []string
}

// flight bounds and describes the batches in flight.
type flight struct {
	slots chan struct{}

	// keys holds the keys of the batches being written.
	keys *kafkaio.KeyGate

	mu sync.Mutex
	// parts counts the partitions of the batches in flight.
	parts map[int]int
	// onParts is told the partitions in flight whenever they change.
	onParts func([]int)
}

func newFlight(n int, onParts func([]int)) *flight {
	return &flight{slots: make(chan struct{}, n), keys: kafkaio.NewKeyGate(), parts: map[int]int{}, onParts: onParts}
}

// acquire takes a slot for a new batch, waiting while MaxInFlight batches
// are in flight.
func (f *flight) acquire(ctx context.Context) error {
	select {
	case f.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release frees a slot that no batch used.
func (f *flight) release() { <-f.slots }

// start records a fetched batch.
func (f *flight) start(b *inflight) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range b.msgs {
		f.parts[m.Partition]++
	}
	f.onParts(slices.Sorted(maps.Keys(f.parts)))
}

// claimKeys waits until no batch being written holds a key of b, then
// claims b's keys.
func (f *flight) claimKeys(b *inflight) {
	b.keys = make([]string, len(b.msgs))
	for i, m := range b.msgs {
		b.keys[i] = string(m.Key)
	}
	f.keys.Claim(b.keys)
}

// finish releases b's keys, partitions and slot.
func (f *flight) finish(b *inflight) {
	f.keys.Release(b.keys)
	f.mu.Lock()
	for _, m := range b.msgs {
		if f.parts[m.Partition]--; f.parts[m.Partition] <= 0 {
			delete(f.parts, m.Partition)
		}
	}
	f.onParts(slices.Sorted(maps.Keys(f.parts)))
	f.mu.Unlock()
	<-f.slots
}

// consume runs the pipeline until ctx ends, then drains it: the batches in
// flight are completed and committed unless DrainTimeout passes first. It
// returns nil on a clean shutdown (complete or not: what is not committed
// is redelivered), and an error when a batch cannot be written while
// serving.
func (a *Annotator) consume(ctx context.Context, r *kafka.Reader, w *kafkaio.Producer) error {
	log := a.cfg.Obs.Logger.With("annotator", a.cfg.Name)
	// work is the context of the batches in flight: a shutdown request does
	// not interrupt them (dropping them would only force another member to
	// redo them); the drain deadline does.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopDrainTimer := context.AfterFunc(ctx, func() { time.AfterFunc(a.cfg.DrainTimeout, cancelWork) })
	defer stopDrainTimer()

	track := kafkaio.NewOffsetTracker()
	fl := newFlight(a.cfg.MaxInFlight, func(p []int) { a.batchParts.Store(&p) })
	// failed ends the fetching when a write fails while serving.
	failed, fail := context.WithCancelCause(ctx)
	defer fail(nil)

	// writeErr is why serving stopped: a batch that could not be written,
	// or a broker that refuses the consumer for good.
	var writeErr error
	var errOnce sync.Once

	// The reader's messages, fetched ahead so a batch takes what has
	// arrived without waiting.
	fetched := make(chan kafka.Message, a.cfg.BatchSize)
	fetchCtx, stopFetch := context.WithCancel(failed)
	defer stopFetch()
	var fetchDone sync.WaitGroup
	fetchDone.Go(func() {
		defer close(fetched)
		for {
			m, err := r.FetchMessage(fetchCtx)
			if err != nil {
				if fetchCtx.Err() != nil {
					return
				}
				if kafkaio.ConsumerRefused(err) {
					errOnce.Do(func() {
						writeErr = fmt.Errorf("the broker refuses this consumer for good (check --session-timeout against the broker's group.min/max.session.timeout.ms, the group's and topic's ACLs): %w", err)
						fail(writeErr)
					})
					return
				}
				if a.fetches.failed(err) {
					log.Warn("fetch failed; retrying", "err", err)
				} else {
					log.Debug("fetch failed; retrying", "err", err)
				}
				select {
				case <-fetchCtx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			if d, n := a.fetches.fetched(); n > 0 {
				log.Info("fetching again", "after", d.Round(time.Millisecond), "failed_fetches", n)
			}
			select {
			case fetched <- m:
			case <-fetchCtx.Done():
				return
			}
		}
	})

	processQ := make(chan *inflight, a.cfg.MaxInFlight)
	writeQ := make(chan *inflight)
	// idle holds a token while the process stage waits for a batch with
	// none queued: the batch being gathered goes out the moment it does.
	idle := make(chan struct{}, 1)
	var stages sync.WaitGroup
	stages.Go(func() {
		defer close(writeQ)
		for {
			if len(processQ) == 0 {
				select {
				case idle <- struct{}{}:
				default:
				}
			}
			b, ok := <-processQ
			if !ok {
				return
			}
			b.outs = a.processBatch(work, a.model.Load(), b.msgs)
			fl.claimKeys(b)
			writeQ <- b
		}
	})
	for range a.cfg.MaxInFlight {
		stages.Go(func() {
			for b := range writeQ {
				err := a.writeBatch(work, w, b.msgs, b.outs)
				if err == nil {
					track.Ack(b.msgs...)
				} else {
					errOnce.Do(func() { writeErr = err; fail(err) })
				}
				fl.finish(b)
			}
		})
	}

	// The committer commits the acknowledged prefix every CommitInterval,
	// and once more when the pipeline has drained.
	sent := map[string]map[int]int64{}
	commit := func(ctx context.Context) {
		if _, err := kafkaio.CommitProgress(ctx, r, track, sent); err != nil {
			// The outputs are out; a failed commit (a rebalance moved the
			// partition, say) only means redelivery, which the keyed
			// outputs make idempotent. Not a reason to stop serving.
			log.Warn("commit failed; acknowledged bags may be redelivered", "err", err)
		}
	}
	stopCommitter := make(chan struct{})
	var committer sync.WaitGroup
	committer.Go(func() {
		t := time.NewTicker(a.cfg.CommitInterval)
		defer t.Stop()
		for {
			select {
			case <-stopCommitter:
				return
			case <-t.C:
				commit(work)
			}
		}
	})

	for failed.Err() == nil {
		if fl.acquire(failed) != nil {
			break
		}
		batch := a.nextBatch(failed, fetched, idle)
		if len(batch) == 0 {
			fl.release()
			continue
		}
		track.Add(batch...)
		b := &inflight{msgs: batch}
		fl.start(b)
		// The stage is about to be busy with b: a token left from when it
		// was idle (a batch that filled before the stage was asked) would
		// send the next batch off at once instead of letting it gather.
		select {
		case <-idle:
		default:
		}
		processQ <- b
	}
	stopFetch()
	fetchDone.Wait()
	close(processQ)
	stages.Wait()
	close(stopCommitter)
	committer.Wait()
	// The final commit gets its own bound: the drain deadline may have
	// passed while the last writes were failing.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	commit(cctx)
	cancel()
	if writeErr != nil {
		if ctx.Err() != nil {
			log.Warn("drain incomplete; uncommitted bags will be redelivered", "err", writeErr, "in_flight", track.InFlight())
			return nil
		}
		return writeErr
	}
	if n := track.InFlight(); n > 0 {
		log.Warn("drain incomplete; uncommitted bags will be redelivered", "in_flight", n)
	}
	log.Info("drained; leaving the group")
	return nil
}

// nextBatch returns up to BatchSize fetched messages: it blocks for the
// first, then takes what has already arrived. If the process stage is busy
// (no token in idle), the batch would wait for it anyway, so it goes on
// gathering what arrives until the stage is free, the batch is full or
// BatchWait has passed, whichever is first: under load batches grow, and
// a bag is never held back while the stage waits for work (a fixed wait
// whenever batches were queued held the bags of a light stream back by up
// to BatchWait: the p99 latency at a tenth of the rate). It returns nil
// when ctx ends first.
func (a *Annotator) nextBatch(ctx context.Context, fetched <-chan kafka.Message, idle <-chan struct{}) []kafka.Message {
	var first kafka.Message
	select {
	case m, ok := <-fetched:
		if !ok {
			return nil
		}
		first = m
	case <-ctx.Done():
		return nil
	}
	batch := []kafka.Message{first}
	// A batch is full by count or by bytes (MaxBatchBytes; the message
	// that reaches the bound is the last).
	size := len(first.Value)
	full := func() bool {
		return len(batch) >= a.cfg.BatchSize || (a.cfg.MaxBatchBytes > 0 && size >= a.cfg.MaxBatchBytes)
	}
	for !full() {
		select {
		case m, ok := <-fetched:
			if !ok {
				return batch
			}
			batch = append(batch, m)
			size += len(m.Value)
			continue
		default:
		}
		break
	}
	if full() {
		return batch
	}
	select {
	case <-idle:
		return batch
	default:
	}
	t := time.NewTimer(a.cfg.BatchWait)
	defer t.Stop()
	for !full() {
		select {
		case m, ok := <-fetched:
			if !ok {
				return batch
			}
			batch = append(batch, m)
			size += len(m.Value)
		case <-idle:
			return batch
		case <-t.C:
			return batch
		case <-ctx.Done():
			return batch
		}
	}
	return batch
}

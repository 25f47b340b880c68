package retrain

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"
)

// The training topic is followed by one reader per partition (follow) and
// checked by a watcher (watch) every ReachCheck: what the Kafka client
// cannot see from inside one partition, the watcher sees from outside. A
// partition whose log was replaced (a broker restarted empty, the topic
// deleted and recreated, with as many partitions or not) is read again
// from its start, and the window forgets the bags of the old log, as a
// restarted retrainer's rebuild would never see them; a partition that
// appears is followed from its start; one that disappears is forgotten.
// The watcher also keeps, per partition, where the topic ends and when the
// retrainer's position last moved, for Ready's frozen-window check.
//
// A replaced log is recognised by an anchor, not by its length: kafka-go
// waits below an offset past the end of a partition ("for more data") and
// reads on from it once the new log has grown past it, skipping the new
// log's first records. Comparing the offset with the partition's end
// therefore misses a new log that grew past the old position before the
// check: a producer that publishes at once to a recreated topic does just
// that. The anchor is a record the retrainer consumed before the last
// check (its offset, timestamp and a checksum of key and value); the
// next check reads the record at that offset again, and a different
// record there, or none because the log ends before it, means the log
// was replaced. A record compacted or deleted away proves nothing either
// way: the anchor moves to a newer record.

// partitionFollow is what the retrainer knows of one partition of its
// topic; under followState.mu.
type partitionFollow struct {
	// gen counts the partition's followers; a message of an older one
	// (still queued when the log was replaced) is dropped.
	gen    int
	cancel context.CancelFunc
	// next is the offset the retrainer expects next; end the partition's
	// end at the last check (-1: not read yet); moved when next last
	// moved, or next was last found at the end.
	next, end int64
	moved     time.Time
	// last is the last record consumed; anchor a record consumed before
	// the last check, checked to be still in the log at the next one.
	last, anchor recordMark
	// behind: not yet read up to where the partition ended when it was
	// first followed during the rebuild.
	behind bool
}

// followState is the partitions followed.
type followState struct {
	// consume is held while a message is checked against its partition's
	// generation and added to the window, and while a partition is reset:
	// a message of a replaced log never enters the window after the
	// window forgot that log.
	consume sync.Mutex
	mu      sync.Mutex
	parts   map[int]*partitionFollow
	// missing is set while the topic does not exist.
	missing error
	// refitting is set while a refit runs; refitEnded is when the last
	// one ended (readiness.go).
	refitting  bool
	refitEnded time.Time
}

// recordMark identifies a record in a partition's log.
type recordMark struct {
	offset int64 // -1: none
	millis int64 // the record's timestamp
	sum    uint32
}

var noMark = recordMark{offset: -1}

func markOf(m kafka.Message) recordMark {
	h := crc32.NewIEEE()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(m.Key)))
	_, _ = h.Write(n[:])
	_, _ = h.Write(m.Key)
	_, _ = h.Write(m.Value)
	return recordMark{offset: m.Offset, millis: m.Time.UnixMilli(), sum: h.Sum32()}
}

// fetched is a message of a partition follower, or (caughtUp) the mark that
// the partition has been read up to where it ended when the retrainer
// started.
type fetched struct {
	partition, gen int
	msg            kafka.Message
	caughtUp       bool
}

// followTopic follows the topic from starts (ends: where each partition
// ended then, the rebuild's goal) until ctx ends: the followers, the
// watcher and the consumer as one group.
func (r *Retrainer) followTopic(ctx context.Context, starts, ends map[int]int64) error {
	// A short queue: its messages are held on top of the window (1024 of
	// 1 MiB bags were a GiB during a rebuild).
	msgs := make(chan fetched, 64)
	g, gctx := errgroup.WithContext(ctx)
	r.follows.mu.Lock()
	r.follows.parts = map[int]*partitionFollow{}
	for _, p := range slices.Sorted(maps.Keys(starts)) {
		r.startFollowerLocked(gctx, g, msgs, p, starts[p], ends[p], true)
	}
	r.follows.mu.Unlock()
	g.Go(func() error { return r.watch(gctx, g, msgs) })
	g.Go(func() error { return r.consume(gctx, msgs) })
	return g.Wait()
}

// startFollowerLocked starts a follower of partition p from off (a new
// generation); rebuilding: the partition counts for the rebuild until
// read up to end. follows.mu held.
func (r *Retrainer) startFollowerLocked(ctx context.Context, g *errgroup.Group, out chan<- fetched, p int, off, end int64, rebuilding bool) {
	pf := r.follows.parts[p]
	if pf == nil {
		pf = &partitionFollow{gen: -1}
		r.follows.parts[p] = pf
	}
	if pf.cancel != nil {
		pf.cancel()
	}
	fctx, cancel := context.WithCancel(ctx)
	pf.gen++
	pf.cancel = cancel
	pf.next, pf.end, pf.moved = off, -1, time.Now()
	pf.last, pf.anchor = noMark, noMark
	pf.behind = rebuilding && !r.rebuilt.Load()
	if !pf.behind {
		end = off // no caught-up mark
	}
	gen := pf.gen
	g.Go(func() error { return r.follow(fctx, p, gen, off, end, out) })
}

// accept checks a followed message against its partition's generation and
// hands it to add (or, a caught-up mark, ends the rebuild once every
// partition is caught up). It returns whether a message entered the
// window's pipeline.
func (r *Retrainer) accept(ctx context.Context, f fetched) (added bool) {
	r.follows.consume.Lock()
	r.follows.mu.Lock()
	pf := r.follows.parts[f.partition]
	if pf == nil || pf.gen != f.gen {
		r.follows.mu.Unlock()
		r.follows.consume.Unlock()
		return false
	}
	if f.caughtUp {
		pf.behind = false
		done := !r.behindLocked()
		r.follows.mu.Unlock()
		r.follows.consume.Unlock()
		if done {
			r.endRebuild(ctx)
		}
		return false
	}
	pf.next, pf.last, pf.moved = f.msg.Offset+1, markOf(f.msg), time.Now()
	if pf.anchor.offset < 0 {
		// The first record read becomes the anchor at once: a log
		// replaced before the next check must not find none.
		pf.anchor = pf.last
	}
	r.follows.mu.Unlock()
	r.add(ctx, f.msg)
	r.follows.consume.Unlock()
	return true
}

// endRebuild ends the rebuild (caughtUp) the first time it is called.
func (r *Retrainer) endRebuild(ctx context.Context) {
	if r.rebuilt.CompareAndSwap(false, true) {
		r.caughtUp(ctx)
	}
}

// behindLocked reports whether a partition is still being rebuilt;
// follows.mu held.
func (r *Retrainer) behindLocked() bool {
	for _, pf := range r.follows.parts {
		if pf.behind {
			return true
		}
	}
	return false
}

// consume adds the followed messages to the window and refits, until ctx
// ends. Nothing is refitted until every partition has caught up.
func (r *Retrainer) consume(ctx context.Context, msgs <-chan fetched) error {
	var tick <-chan time.Time
	if r.cfg.Interval > 0 {
		t := time.NewTicker(r.cfg.Interval)
		defer t.Stop()
		tick = t.C
	}
	r.follows.mu.Lock()
	behind := r.behindLocked()
	r.follows.mu.Unlock()
	if !behind {
		r.endRebuild(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case f := <-msgs:
			if !r.accept(ctx, f) {
				continue
			}
			if r.rebuilt.Load() && r.cfg.Every > 0 && r.freshCount() >= r.cfg.Every && r.Len() >= r.cfg.MinBags {
				r.refitLogged(ctx)
			}
		case <-tick:
			if r.rebuilt.Load() && r.freshCount() > 0 && r.Len() >= r.cfg.MinBags {
				r.refitLogged(ctx)
			}
		}
	}
}

// startOffsets returns, per partition, the offset from which the window is
// rebuilt (the last Window messages of each partition: the window may need
// them all if the others are empty), and the offset where the partition
// ends now, up to which the rebuild goes.
func (r *Retrainer) startOffsets(ctx context.Context) (starts, ends map[int]int64, err error) {
	var parts []kafka.Partition
	err = retry(ctx, r.cfg.Obs, "read partitions", func() error {
		parts, err = r.readPartitions(ctx)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	starts, ends = map[int]int64{}, map[int]int64{}
	for _, p := range parts {
		var first, last int64
		err := retry(ctx, r.cfg.Obs, "read offsets", func() error {
			first, last, err = r.readOffsets(ctx, p.ID)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		starts[p.ID] = max(first, last-int64(r.cfg.Window))
		ends[p.ID] = last
	}
	return starts, ends, nil
}

// readPartitions returns the topic's partitions, from the first broker
// that answers.
func (r *Retrainer) readPartitions(ctx context.Context) ([]kafka.Partition, error) {
	var errs []error
	for _, b := range r.cfg.Brokers {
		parts, err := func() ([]kafka.Partition, error) {
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			conn, err := r.cfg.Security.Dialer().DialContext(dctx, "tcp", b)
			if err != nil {
				return nil, err
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			return conn.ReadPartitions(r.cfg.Topic)
		}()
		if err == nil || errors.Is(err, kafka.UnknownTopicOrPartition) {
			return parts, err
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// readOffsets returns the first offset of a partition and the offset after
// its last record, from its leader.
func (r *Retrainer) readOffsets(ctx context.Context, partition int) (first, last int64, err error) {
	err = r.atLeader(ctx, partition, func(conn *kafka.Conn) error {
		first, last, err = conn.ReadOffsets()
		return err
	})
	return first, last, err
}

// readRecord returns the first record of a partition at or after offset.
func (r *Retrainer) readRecord(ctx context.Context, partition int, offset int64) (m kafka.Message, err error) {
	err = r.atLeader(ctx, partition, func(conn *kafka.Conn) error {
		if _, err := conn.Seek(offset, kafka.SeekAbsolute|kafka.SeekDontCheck); err != nil {
			return err
		}
		// Fetch v3 and later answer with the first record batch whatever
		// the limit: a small one keeps the check from fetching the
		// partition's tail (a 1 MiB bag is one record).
		b := conn.ReadBatch(1, 1<<10)
		m, err = b.ReadMessage()
		return errors.Join(err, b.Close())
	})
	return m, err
}

// atLeader runs fn on a connection to the partition's leader, within 5 s,
// through the first broker that answers.
func (r *Retrainer) atLeader(ctx context.Context, partition int, fn func(*kafka.Conn) error) error {
	var errs []error
	for _, b := range r.cfg.Brokers {
		err := func() error {
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			conn, err := r.cfg.Security.Dialer().DialLeader(dctx, "tcp", b, r.cfg.Topic, partition)
			if err != nil {
				return err
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			return fn(conn)
		}()
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// follow reads one partition from off onwards into out until ctx ends,
// marking when it has read up to end (at once when off >= end). Read
// errors are retried; a reader that cannot be positioned is an error.
// Whether its log is still the one it reads is the watcher's to check.
func (r *Retrainer) follow(ctx context.Context, partition, gen int, off, end int64, out chan<- fetched) error {
	send := func(f fetched) bool {
		f.partition, f.gen = partition, gen
		select {
		case out <- f:
			return true
		case <-ctx.Done():
			return false
		}
	}
	caughtUp := off >= end
	if caughtUp && !send(fetched{caughtUp: true}) {
		return nil
	}
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: r.cfg.Brokers, Dialer: r.cfg.Security.Dialer(), Topic: r.cfg.Topic, Partition: partition,
		MinBytes: 1, MaxBytes: 64 << 20, MaxWait: 200 * time.Millisecond})
	defer rd.Close()
	if err := rd.SetOffset(off); err != nil {
		return fmt.Errorf("follow partition %d of %s from offset %d: %w", partition, r.cfg.Topic, off, err)
	}
	for {
		m, err := rd.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.cfg.Obs.Logger.Warn("read training topic", "partition", partition, "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
			continue
		}
		if !send(fetched{msg: m}) {
			return nil
		}
		if !caughtUp && m.Offset >= end-1 {
			caughtUp = true
			if !send(fetched{caughtUp: true}) {
				return nil
			}
		}
	}
}

// watch checks the topic every ReachCheck until ctx ends (checkTopic).
func (r *Retrainer) watch(ctx context.Context, g *errgroup.Group, out chan<- fetched) error {
	t := time.NewTicker(r.cfg.ReachCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.checkTopic(ctx, g, out)
		}
	}
}

// checkTopic compares the topic with what the retrainer follows: partitions
// that appeared are followed from their start, partitions that
// disappeared are forgotten, partitions whose log was replaced are read
// again from their start (see the comment at the top of the file), and
// each partition's end is kept for Ready. What the broker does not answer
// is left for the next check.
func (r *Retrainer) checkTopic(ctx context.Context, g *errgroup.Group, out chan<- fetched) {
	log := r.cfg.Obs.Logger.With("topic", r.cfg.Topic)
	parts, err := r.readPartitions(ctx)
	r.follows.mu.Lock()
	r.follows.missing = nil
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		r.follows.missing = err
	}
	r.follows.mu.Unlock()
	if err != nil {
		log.Debug("check training topic", "err", err)
		return
	}
	present := map[int]bool{}
	for _, p := range parts {
		present[p.ID] = true
	}
	r.follows.mu.Lock()
	var gone []int
	for p := range r.follows.parts {
		if !present[p] {
			gone = append(gone, p)
		}
	}
	r.follows.mu.Unlock()
	for _, p := range gone {
		log.Warn("training partition gone (topic recreated with fewer partitions); its bags leave the window", "partition", p)
		r.resetPartition(ctx, g, out, p, -1, 0)
	}
	for _, p := range parts {
		first, last, err := r.readOffsets(ctx, p.ID)
		if err != nil {
			log.Debug("check training partition offsets", "partition", p.ID, "err", err)
			continue
		}
		r.follows.mu.Lock()
		pf := r.follows.parts[p.ID]
		var next int64
		var anchor, newest recordMark
		if pf != nil {
			// newest is taken before the anchor is checked: a record
			// read after the check began may be of a new log already.
			next, anchor, newest = pf.next, pf.anchor, pf.last
		}
		r.follows.mu.Unlock()
		if pf == nil {
			log.Info("new training partition; following it from its start", "partition", p.ID, "start", first, "end", last)
			r.resetPartition(ctx, g, out, p.ID, first, last)
			continue
		}
		why := ""
		switch {
		case next > last:
			why = fmt.Sprintf("the offset read, %d, is beyond the partition's end, %d", next, last)
		case anchor.offset >= 0 && anchor.offset >= last:
			why = fmt.Sprintf("the partition ends at %d, before the record read at offset %d", last, anchor.offset)
		case anchor.offset >= first:
			m, err := r.readRecord(ctx, p.ID, anchor.offset)
			if err != nil {
				log.Debug("check training partition record", "partition", p.ID, "offset", anchor.offset, "err", err)
				continue
			}
			if m.Offset == anchor.offset && markOf(m) != anchor {
				why = fmt.Sprintf("offset %d holds another record than the one read there", anchor.offset)
			}
		}
		if why != "" {
			log.Warn("training partition replaced (broker restarted empty, or topic recreated): its old bags leave the window and it is read again from its start",
				"partition", p.ID, "why", why, "start", first, "end", last)
			r.resetPartition(ctx, g, out, p.ID, first, last)
			continue
		}
		if newest.offset < 0 && anchor.offset < 0 && next > first {
			// Nothing read yet (a follower that started at the end):
			// the record before its offset is the anchor.
			if m, err := r.readRecord(ctx, p.ID, next-1); err == nil && m.Offset == next-1 {
				newest = markOf(m)
			}
		}
		r.follows.mu.Lock()
		if pf == r.follows.parts[p.ID] {
			// The anchor held (or proves nothing any more): the newest
			// record read when the check began becomes the one checked
			// next time.
			if newest.offset >= 0 {
				pf.anchor = newest
			}
			pf.end = last
			if pf.next >= last {
				pf.moved = time.Now()
			}
		}
		r.follows.mu.Unlock()
	}
}

// resetPartition forgets what the retrainer read of partition p (its bags
// leave the window, its offsets the tracker, its fitted offset the
// target) and, when from >= 0, follows it again from there (the rebuild,
// if not over, then waits for it up to end); from < 0: the partition is
// gone.
func (r *Retrainer) resetPartition(ctx context.Context, g *errgroup.Group, out chan<- fetched, p int, from, end int64) {
	r.follows.consume.Lock()
	r.follows.mu.Lock()
	pf := r.follows.parts[p]
	if pf != nil && pf.cancel != nil {
		pf.cancel()
	}
	if from >= 0 {
		r.startFollowerLocked(ctx, g, out, p, from, end, true)
	} else {
		delete(r.follows.parts, p)
	}
	if pf != nil {
		r.track.Forget(r.cfg.Topic, p)
	}
	done := !r.behindLocked()
	r.follows.mu.Unlock()
	if pf != nil {
		r.mu.Lock()
		delete(r.fitted, p)
		r.order = slices.DeleteFunc(r.order, func(id string) bool {
			if r.bags[id].partition != p {
				return false
			}
			r.dropLocked(id)
			r.changed = true
			return true
		})
		r.mu.Unlock()
	}
	r.follows.consume.Unlock()
	if done {
		r.endRebuild(ctx)
	}
}

// deadJobFor starts the dead letter of m, read by its partition's current
// follower.
func (r *Retrainer) deadJobFor(m kafka.Message) deadJob {
	r.follows.mu.Lock()
	defer r.follows.mu.Unlock()
	gen := -1
	if pf := r.follows.parts[m.Partition]; pf != nil {
		gen = pf.gen
	}
	return deadJob{in: m, gen: gen}
}

// ackDeadLetter acknowledges the message of a dead letter that is out to
// the offset tracker, unless its partition's log was replaced since it was
// read: its offset then names a record of the new log.
func (r *Retrainer) ackDeadLetter(j deadJob) {
	// Under follows.mu, as resetPartition's Forget is, so that a reset
	// does not come between the check and the acknowledgement (not under
	// follows.consume: the consumer may be waiting for the writer's
	// queue).
	r.follows.mu.Lock()
	defer r.follows.mu.Unlock()
	// gen -1: read with no follower (a message handed to add directly).
	if pf := r.follows.parts[j.in.Partition]; pf == nil && j.gen == -1 || pf != nil && pf.gen == j.gen {
		r.track.Ack(j.in)
	}
}

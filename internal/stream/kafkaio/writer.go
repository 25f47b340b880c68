// Package kafkaio is the pipeline's Kafka plumbing, shared by the services:
// the producer (its settings, the message size limit, the acknowledged
// write that refuses per record what the broker never accepts and reports
// a write that keeps failing), explicit topic creation, the message headers
// (schema version and W3C trace context), the observer's tail of a topic,
// and kafka-go's logging routed to slog. It holds no service logic.
package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// NewWriter returns a producer for the pipeline's topics whose produce
// requests stay within DefaultMaxMessageBytes. Every write waits for all
// in-sync replicas (kafka-go defaults to no acknowledgement at all, which
// would make the commit-after-ack discipline meaningless), messages are
// partitioned by key (the bag id) so one bag's records stay ordered, and the
// topic is set per message so one writer serves every output.
//
// sec secures the connections (TLS, SASL); its zero value is plaintext. The
// services write through a Producer, which bounds requests by the limit
// the cluster reports and handles the records it refuses.
func NewWriter(brokers []string, sec kafkasec.Conn) *kafka.Writer {
	return newWriter(brokers, sec, DefaultMaxMessageBytes, batchMessages, 0, DefaultLinger)
}

// DefaultLinger is how long a partial produce request waits for more
// records (Kafka's linger.ms). 1 ms still lets the writes in flight at
// once share requests, and took a millisecond off the median latency at a
// tenth of the pipeline's rate (BenchmarkPipeline p50_ms@10%, 2.9 ms
// against 3.9 ms at 2 ms).
const DefaultLinger = time.Millisecond

// batchMessages bounds the records of one produce request per partition.
// kafka-go allocates a batch's whole capacity up front (BatchSize
// messages of about 150 bytes each, zeroed) for every request, however
// few records it carries: at 1,000 that was a 150 KB allocation per
// request and a tenth of the pipeline's CPU. Concurrent writes fill
// requests of 256 records (about 300 KB of MSCV2 bags) at once, and a
// larger write goes out as several requests in a row.
const batchMessages = 256

func newWriter(brokers []string, sec kafkasec.Conn, maxMessageBytes, batchSize int, codec kafka.Compression, linger time.Duration) *kafka.Writer {
	return &kafka.Writer{
		Compression:  codec,
		Addr:         kafka.TCP(brokers...),
		Transport:    sec.Transport(),
		RequiredAcks: kafka.RequireAll,
		Balancer:     &kafka.Hash{},
		// WriteMessages is called with whole batches; a short timeout stops
		// a partial batch from waiting the 1 s default (DefaultLinger).
		BatchTimeout: linger,
		BatchSize:    batchSize,
		// One produce request per partition carries at most this much: a
		// broker refuses a larger one whole (MESSAGE_TOO_LARGE), and a
		// request packing several records that each fit would be refused
		// on every retry.
		BatchBytes:  int64(RecordLimit(maxMessageBytes)),
		MaxAttempts: 5,
		// Topics are created explicitly (EnsureTopics).
		AllowAutoTopicCreation: false,
	}
}

// ProducerConfig configures a Producer.
type ProducerConfig struct {
	Brokers []string
	// Security secures the connections (zero: plaintext).
	Security kafkasec.Conn
	// MaxMessageBytes is the broker's limit on a produce request per
	// partition (max.message.bytes; see MaxMessageBytes); <= 0 means
	// DefaultMaxMessageBytes. No request and no record exceeds it.
	MaxMessageBytes int
	// StallAfter is how long a write may keep failing before it is
	// reported stalled (Stall, an ERROR log); <= 0 means 30 s.
	StallAfter time.Duration
	// Compression compresses the record batches (zero: none). The size
	// limit still applies to the uncompressed records, so a record that
	// fits compressed but not raw is refused before it is sent, the same
	// with or without compression.
	Compression kafka.Compression
	// Linger is how long a partial produce request waits for the records
	// of other writes before it is sent (Kafka's linger.ms); <= 0 means
	// DefaultLinger. Shorter lowers latency when traffic is light; longer
	// packs the concurrent writes of heavy traffic into fewer requests.
	Linger time.Duration
	Logger *slog.Logger
}

// ParseCompression maps a codec name (none, gzip, snappy, lz4, zstd) to
// kafka-go's codec; "" and "none" mean no compression.
func ParseCompression(name string) (kafka.Compression, error) {
	switch name {
	case "", "none":
		return 0, nil
	case "gzip":
		return kafka.Gzip, nil
	case "snappy":
		return kafka.Snappy, nil
	case "lz4":
		return kafka.Lz4, nil
	case "zstd":
		return kafka.Zstd, nil
	}
	return 0, fmt.Errorf("unknown compression %q (none, gzip, snappy, lz4, zstd)", name)
}

// Producer writes messages and waits for their acknowledgement, within a
// message size limit. It is safe for concurrent use.
type Producer struct {
	cfg ProducerConfig
	// batch packs records into requests of at most MaxMessageBytes; single
	// sends one record per request, so a refusal names its record.
	batch, single *kafka.Writer

	mu     sync.Mutex
	nextID uint64
	writes map[uint64]*writeState // writes that are retrying
}

type writeState struct {
	since   time.Time
	err     error
	n       int
	topics  []string
	stalled bool // reported at ERROR
}

// NewProducer returns a producer; Close it when done.
func NewProducer(cfg ProducerConfig) *Producer {
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Linger <= 0 {
		cfg.Linger = DefaultLinger
	}
	return &Producer{cfg: cfg,
		batch:  newWriter(cfg.Brokers, cfg.Security, cfg.MaxMessageBytes, batchMessages, cfg.Compression, cfg.Linger),
		single: newWriter(cfg.Brokers, cfg.Security, cfg.MaxMessageBytes, 1, cfg.Compression, cfg.Linger),
		writes: map[uint64]*writeState{}}
}

// MaxMessageBytes returns the limit the producer keeps to.
func (p *Producer) MaxMessageBytes() int { return p.cfg.MaxMessageBytes }

// ValueBudget returns the largest value a message with this key and these
// headers may carry.
func (p *Producer) ValueBudget(key []byte, headers []kafka.Header) int {
	return RecordLimit(p.cfg.MaxMessageBytes) - RecordSize(kafka.Message{Key: key, Headers: headers})
}

// Fits reports whether m can be written.
func (p *Producer) Fits(m kafka.Message) bool {
	return RecordSize(m) <= RecordLimit(p.cfg.MaxMessageBytes)
}

// Close flushes and closes the writers.
func (p *Producer) Close() error { return errors.Join(p.batch.Close(), p.single.Close()) }

// TooLargeError is a message larger than the producer's limit, refused
// before it is sent.
type TooLargeError struct {
	Size, Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("message of %d bytes exceeds the %d-byte limit (max.message.bytes less the batch header)", e.Size, e.Limit)
}

// Unwrap makes a TooLargeError match kafka.MessageSizeTooLarge, the
// broker's refusal of the same message.
func (e *TooLargeError) Unwrap() error { return kafka.MessageSizeTooLarge }

// Refused is a message of a Write that can never be written: the error says
// why (errors.Is kafka.MessageSizeTooLarge for one too large).
type Refused struct {
	Index int
	Err   error
}

// Reason is the dead-letter reason of a refused message, the same at every
// door: oversize when the broker found it too large, produce_refused for
// any other refusal.
func (r Refused) Reason() wire.Reason {
	if errors.Is(r.Err, kafka.MessageSizeTooLarge) {
		return wire.ReasonOversize
	}
	return wire.ReasonProduceRefused
}

// refusal reports whether a broker error refuses the records of a request
// for good: retrying the same bytes cannot succeed. Anything else (a leader
// moving, the broker down, too few replicas) is retried.
func refusal(err error) bool {
	for _, e := range []kafka.Error{kafka.MessageSizeTooLarge, kafka.RecordListTooLarge, kafka.InvalidRecord, kafka.InvalidTimestamp} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Write writes msgs and waits until every one is acknowledged or refused.
// Transient failures are retried with back-off until ctx ends (only the
// failed messages: an acknowledged message is never written twice by this
// loop); a write that keeps failing is logged at WARN, then at ERROR and
// reported by Stall once it has failed for StallAfter. A refusal of a
// request holding several records is retried one record per request, so
// only the records the broker refuses alone are returned, with the
// broker's error; a record larger than the limit is refused without being
// sent. Write returns an error only when ctx ends first.
func (p *Producer) Write(ctx context.Context, msgs []kafka.Message) ([]Refused, error) {
	var refused []Refused
	// pending holds indexes into msgs; alone those to send one per request.
	var pending []int
	alone := map[int]bool{}
	limit := RecordLimit(p.cfg.MaxMessageBytes)
	for i, m := range msgs {
		if n := RecordSize(m); n > limit {
			refused = append(refused, Refused{Index: i, Err: &TooLargeError{Size: n, Limit: limit}})
			continue
		}
		pending = append(pending, i)
	}
	var id uint64
	defer func() {
		if id != 0 {
			p.settle(id)
		}
	}()
	backoff := 50 * time.Millisecond
	for len(pending) > 0 {
		var batched, single []int
		for _, i := range pending {
			if alone[i] {
				single = append(single, i)
			} else {
				batched = append(batched, i)
			}
		}
		errs := make(map[int]error)
		p.writeBatched(ctx, msgs, batched, errs)
		p.writeAlone(ctx, msgs, single, errs)
		var retry []int
		var lastErr error
		isolate := false
		for _, i := range pending {
			err, failed := errs[i]
			switch {
			case !failed:
			case refusal(err) && alone[i]:
				refused = append(refused, Refused{Index: i, Err: err})
			case refusal(err):
				// The request was refused whole: find out which of its
				// records the broker refuses, one per request.
				alone[i] = true
				isolate = true
				retry = append(retry, i)
			default:
				retry = append(retry, i)
				lastErr = err
			}
		}
		pending = retry
		if len(pending) == 0 {
			break
		}
		if ctx.Err() != nil {
			return refused, fmt.Errorf("write %d messages: %w (last error: %v)", len(pending), ctx.Err(), lastErr)
		}
		if lastErr == nil && isolate {
			continue // only refusals to isolate: no reason to wait
		}
		if id == 0 {
			id = p.begin()
		}
		p.failed(id, msgs, pending, lastErr)
		select {
		case <-ctx.Done():
			return refused, fmt.Errorf("write %d messages: %w (last error: %v)", len(pending), ctx.Err(), lastErr)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	slices.SortFunc(refused, func(a, b Refused) int { return a.Index - b.Index })
	return refused, nil
}

// writeBatched writes msgs[idx] in batched requests and records the
// failures in errs.
func (p *Producer) writeBatched(ctx context.Context, msgs []kafka.Message, idx []int, errs map[int]error) {
	if len(idx) == 0 {
		return
	}
	sub := make([]kafka.Message, len(idx))
	for j, i := range idx {
		sub[j] = msgs[i]
	}
	err := p.batch.WriteMessages(ctx, sub...)
	if err == nil {
		return
	}
	var we kafka.WriteErrors
	if errors.As(err, &we) && len(we) == len(sub) {
		for j, e := range we {
			if e != nil {
				errs[idx[j]] = e
			}
		}
		return
	}
	// The call failed as a whole before anything was sent (metadata,
	// context): every message is retried.
	for _, i := range idx {
		errs[i] = err
	}
}

// writeAlone writes msgs[idx] one per request and records the failures in
// errs.
func (p *Producer) writeAlone(ctx context.Context, msgs []kafka.Message, idx []int, errs map[int]error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, i := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := p.single.WriteMessages(ctx, msgs[i])
			var we kafka.WriteErrors
			if errors.As(err, &we) && len(we) == 1 {
				err = we[0]
			}
			if err != nil {
				mu.Lock()
				errs[i] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func (p *Producer) begin() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	p.writes[p.nextID] = &writeState{since: time.Now()}
	return p.nextID
}

// failed records a failed attempt of write id and logs it: at WARN on the
// first failure, at ERROR once it has failed for StallAfter. Concurrent
// writes to a failing cluster fail together: only the first to fail is
// logged at WARN and only the first to stall at ERROR, so an outage is
// one WARN and one ERROR however many writes are in flight.
func (p *Producer) failed(id uint64, msgs []kafka.Message, pending []int, err error) {
	topics := map[string]bool{}
	for _, i := range pending {
		topics[msgs[i].Topic] = true
	}
	p.mu.Lock()
	s := p.writes[id]
	othersFailing, othersStalled := false, false
	for oid, o := range p.writes {
		if oid != id {
			othersFailing = othersFailing || o.err != nil
			othersStalled = othersStalled || o.stalled
		}
	}
	first := s.err == nil && !othersFailing
	s.err, s.n, s.topics = err, len(pending), slices.Sorted(maps.Keys(topics))
	age := time.Since(s.since)
	stall := !s.stalled && age >= p.cfg.StallAfter
	s.stalled = s.stalled || stall
	stall = stall && !othersStalled
	p.mu.Unlock()
	switch {
	case first:
		p.cfg.Logger.Warn("write failed; retrying", "messages", len(pending), "topics", s.topics, "err", err)
	case stall:
		p.cfg.Logger.Error("write stalled: still failing; retrying", "for", age.Round(time.Second), "messages", len(pending), "topics", s.topics, "err", err)
	}
}

// settle ends write id; the recovery is logged when no other write is
// still failing.
func (p *Producer) settle(id uint64) {
	p.mu.Lock()
	s := p.writes[id]
	delete(p.writes, id)
	othersFailing := false
	for _, o := range p.writes {
		othersFailing = othersFailing || o.err != nil
	}
	p.mu.Unlock()
	if s != nil && s.err != nil && !othersFailing {
		p.cfg.Logger.Info("write recovered", "after", time.Since(s.since).Round(time.Millisecond), "topics", s.topics)
	}
}

// Stall describes the oldest write that has kept failing.
type Stall struct {
	// Since is when the write first failed; Err is its last error and
	// Messages how many of its messages are unacknowledged.
	Since    time.Time
	Err      error
	Messages int
	Topics   []string
}

// Stall returns the oldest write that has been failing for at least
// StallAfter, if any.
func (p *Producer) Stall() (Stall, bool) {
	s, ok := p.Retrying()
	if !ok || time.Since(s.Since) < p.cfg.StallAfter {
		return Stall{}, false
	}
	return s, true
}

// Retrying returns the oldest write that is being retried, however long.
func (p *Producer) Retrying() (Stall, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var oldest *writeState
	for _, s := range p.writes {
		if s.err != nil && (oldest == nil || s.since.Before(oldest.since)) {
			oldest = s
		}
	}
	if oldest == nil {
		return Stall{}, false
	}
	return Stall{Since: oldest.since, Err: oldest.err, Messages: oldest.n, Topics: oldest.topics}, true
}

// CompressionFlag is a --compression flag value: a codec name that
// ParseCompression accepts, checked when the flag is set.
type CompressionFlag string

// String returns the codec name.
func (c *CompressionFlag) String() string { return string(*c) }

// Set checks and sets the codec name.
func (c *CompressionFlag) Set(s string) error {
	if _, err := ParseCompression(s); err != nil {
		return err
	}
	*c = CompressionFlag(s)
	return nil
}

// Codec returns kafka-go's codec (zero: none).
func (c CompressionFlag) Codec() kafka.Compression {
	codec, _ := ParseCompression(string(c))
	return codec
}

package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/httpguard"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/sample"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// PublisherConfig configures the ingest side of the pipeline.
type PublisherConfig struct {
	Brokers []string
	// Security secures the Kafka connections (zero: plaintext).
	Security kafkasec.Conn
	Topics   wire.Topics
	// LabelFraction of the labeled bags keep their labels (and also go to
	// the training topic); the others are published unlabeled. 1 keeps
	// every label. The choice hashes the bag id with Seed, so it is the
	// same on every run and independent of the order of the bags.
	LabelFraction float64
	Seed          int64
	// WithInstanceLabels publishes ground-truth instance labels. They are
	// held back by default: the pipeline is weakly supervised.
	WithInstanceLabels bool
	// MaxMessageBytes rejects larger bags (oversize); <= 0: no limit. It
	// also bounds every produce request and record, together with the
	// max.message.bytes the broker reports for the topics written (the
	// smaller wins; kafkaio.DefaultMaxMessageBytes when <= 0): a bag whose
	// message would exceed that is rejected as oversize (ErrTooLarge)
	// before anything is produced.
	MaxMessageBytes int
	// StallAfter is how long a publish may keep failing before it is
	// logged at ERROR and reported by Stalled; <= 0 means 30 s.
	StallAfter time.Duration
	// Compression compresses the record batches (zero: none).
	Compression kafka.Compression
	// Linger is how long a partial produce request waits for more records
	// (kafkaio.ProducerConfig.Linger; <= 0: kafkaio.DefaultLinger).
	Linger time.Duration
	// Format encodes the bags published (zero: JSON). Bags given as JSON
	// (PublishRaw) are checked as JSON, then sent in Format; dead letters
	// keep the original.
	Format wire.Format
	// InFlight bounds the batches of one stream (a file, standard input,
	// an HTTP request) published concurrently; <= 0 means 4.
	InFlight int
	// MediaCache, when non-nil, keeps featurized photos and documents by
	// featurizer and media hash (a *featurecache.Cache): media sent again,
	// by any door, are not decoded nor featurized again.
	MediaCache featurecache.Raw
	Obs        service.Observability
}

// Publisher validates bags and publishes them. It is safe for concurrent use.
type Publisher struct {
	cfg       PublisherConfig
	validator *wire.Validator
	tracer    trace.Tracer

	// w is made by Start, or else by the first publish, with the limit
	// the cluster reports for the topics (NewPublisher has no context to
	// ask it with).
	wmu sync.Mutex
	w   *kafkaio.Producer

	mu    sync.Mutex
	stats IngestStats
	m     publisherMetrics
}

// ErrTooLarge is matched (errors.Is) by the error of a bag whose message
// exceeds the message size limit; errors.As to *TooLargeError gives the
// sizes. The HTTP handler answers it with 413.
var ErrTooLarge = errors.New("message too large")

// TooLargeError is a bag whose message (value, key and headers) exceeds
// the limit of what a produce request may carry.
type TooLargeError struct {
	ID          string
	Size, Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("bag %q: message of %d bytes exceeds the %d-byte limit", e.ID, e.Size, e.Limit)
}

// Unwrap makes a TooLargeError match ErrTooLarge.
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// IngestStats counts what a publisher did.
type IngestStats struct {
	Published int                 `json:"published"`
	Labeled   int                 `json:"labeled"`
	Rejected  map[wire.Reason]int `json:"rejected"`
}

// NewPublisher returns a publisher writing to the configured brokers.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	if len(cfg.Brokers) == 0 || cfg.Topics.Annotate == "" {
		return nil, errors.New("publisher: brokers and the annotate topic are required")
	}
	if cfg.LabelFraction < 0 || cfg.LabelFraction > 1 {
		return nil, fmt.Errorf("publisher: label fraction %v outside [0,1]", cfg.LabelFraction)
	}
	cfg.Obs = cfg.Obs.WithDefaults()
	v, err := wire.NewValidator(cfg.MaxMessageBytes)
	if err != nil {
		return nil, err
	}
	p := &Publisher{cfg: cfg, validator: v, tracer: cfg.Obs.Tracer.Tracer(service.Instrumentation),
		stats: IngestStats{Rejected: map[wire.Reason]int{}}}
	if err := p.initMetrics(); err != nil {
		return nil, fmt.Errorf("publisher metrics: %w", err)
	}
	return p, nil
}

// publisherMetrics are counters of the bags published and rejected.
type publisherMetrics struct {
	published, labeled, rejected metric.Int64Counter
	// mediaCache counts the media doors' cache lookups by medium (photo,
	// document) and result (hit, miss).
	mediaCache metric.Int64Counter
}

func (p *Publisher) initMetrics() error {
	mt := p.cfg.Obs.Meter.Meter(service.Instrumentation)
	var err error
	var errs []error
	p.m.published, err = mt.Int64Counter("mimlstream.ingest.published", metric.WithUnit("{bag}"), metric.WithDescription("Bags published to the annotate topic."))
	errs = append(errs, err)
	p.m.labeled, err = mt.Int64Counter("mimlstream.ingest.labeled", metric.WithUnit("{bag}"), metric.WithDescription("Labeled bags also published to the training topic."))
	errs = append(errs, err)
	p.m.rejected, err = mt.Int64Counter("mimlstream.ingest.rejected", metric.WithUnit("{bag}"), metric.WithDescription("Bags rejected (dead-lettered when a dead-letter topic is set), by reason."))
	errs = append(errs, err)
	p.m.mediaCache, err = mt.Int64Counter("mimlstream.ingest.media_cache", metric.WithUnit("{medium}"),
		metric.WithDescription("Photos and documents looked up in the feature cache by featurizer and media hash, by medium (photo, document) and result: hit (not featurized again) or miss."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Present from the start, every reason included, so rates and alerts
	// are defined before the first bag.
	ctx := context.Background()
	p.m.published.Add(ctx, 0)
	p.m.labeled.Add(ctx, 0)
	for _, medium := range []string{"photo", "document"} {
		for _, r := range []string{"hit", "miss"} {
			p.m.mediaCache.Add(ctx, 0, metric.WithAttributes(attribute.String("medium", medium), attribute.String("result", r)))
		}
	}
	for _, r := range wire.Reasons() {
		p.m.rejected.Add(ctx, 0, metric.WithAttributes(attribute.String("reason", string(r))))
	}
	return nil
}

// Start learns the message size limit when the service starts: it asks
// the cluster for the max.message.bytes of the topics written, under ctx,
// and makes the producer with it. When the cluster cannot say, it returns
// the error (for the caller to log) and makes nothing: the first publish
// asks again.
func (p *Publisher) Start(ctx context.Context) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.w != nil {
		return nil
	}
	limit, err := p.askLimit(ctx)
	if err != nil {
		return err
	}
	p.w = p.newProducer(limit)
	return nil
}

// producer returns the producer, making it at the first call when Start
// has not. The cluster is then asked apart from the publish's context: a
// client's request cancelled, or a short deadline, must not become the
// limit kept for the life of the process. When the cluster cannot say,
// the configured limit is kept.
func (p *Publisher) producer(ctx context.Context) *kafkaio.Producer {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.w != nil {
		return p.w
	}
	limit, err := p.askLimit(context.WithoutCancel(ctx))
	if err != nil {
		p.cfg.Obs.Logger.Warn("the cluster does not report the topics' max.message.bytes; keeping to the configured limit", "limit", limit, "err", err)
	}
	p.w = p.newProducer(limit)
	return p.w
}

// askLimit asks the cluster for the limit of the topics written
// (kafkaio.MaxMessageBytes: within 10 s; the configured limit when it
// cannot say).
func (p *Publisher) askLimit(ctx context.Context) (int, error) {
	topics := []string{p.cfg.Topics.Annotate}
	for _, t := range []string{p.cfg.Topics.Train, p.cfg.Topics.DeadLetter} {
		if t != "" {
			topics = append(topics, t)
		}
	}
	return kafkaio.MaxMessageBytes(ctx, p.cfg.Brokers, p.cfg.Security, p.cfg.MaxMessageBytes, topics...)
}

func (p *Publisher) newProducer(limit int) *kafkaio.Producer {
	return kafkaio.NewProducer(kafkaio.ProducerConfig{Brokers: p.cfg.Brokers, Security: p.cfg.Security, MaxMessageBytes: limit,
		StallAfter: p.cfg.StallAfter, Compression: p.cfg.Compression, Linger: p.cfg.Linger, Logger: p.cfg.Obs.Logger})
}

// MaxMessageBytes returns the message size limit the publisher keeps to
// (the configured one until Start or the first publish has asked the
// cluster).
func (p *Publisher) MaxMessageBytes() int {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.w != nil {
		return p.w.MaxMessageBytes()
	}
	if p.cfg.MaxMessageBytes > 0 {
		return p.cfg.MaxMessageBytes
	}
	return kafkaio.DefaultMaxMessageBytes
}

// Stalled reports a publish that has kept failing for longer than
// StallAfter, for a readiness check.
func (p *Publisher) Stalled() (kafkaio.Stall, bool) {
	p.wmu.Lock()
	w := p.w
	p.wmu.Unlock()
	if w == nil {
		return kafkaio.Stall{}, false
	}
	return w.Stall()
}

// Close flushes and closes the producer.
func (p *Publisher) Close() error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.w == nil {
		return nil
	}
	return p.w.Close()
}

// Stats returns a copy of the counters.
func (p *Publisher) Stats() IngestStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Rejected = make(map[wire.Reason]int, len(p.stats.Rejected))
	for k, v := range p.stats.Rejected {
		s.Rejected[k] = v
	}
	return s
}

// InFlight returns how many batches of one stream may be in flight.
func (p *Publisher) InFlight() int {
	if p.cfg.InFlight <= 0 {
		return 4
	}
	return p.cfg.InFlight
}

// KeepLabels reports whether a labeled bag keeps its labels under the label
// fraction.
func (p *Publisher) KeepLabels(id string) bool {
	if p.cfg.LabelFraction >= 1 {
		return true
	}
	return sample.Unit(strconv.FormatInt(p.cfg.Seed, 10), id) < p.cfg.LabelFraction
}

// Rejection is a bag that was not published.
type Rejection struct {
	Index  int         `json:"index"`
	ID     string      `json:"id,omitempty"`
	Reason wire.Reason `json:"reason"`
	Error  string      `json:"error"`
	err    error
}

// Err returns the rejection's error: errors.Is(r.Err(), ErrTooLarge) for a
// bag too large to produce, a *wire.RejectError with the reason in any
// case.
func (r Rejection) Err() error { return r.err }

// PublishDataset publishes bags of a dataset (in order), applying the label
// fraction, and waits for the acknowledgements.
func (p *Publisher) PublishDataset(ctx context.Context, ds *mil.Dataset, bags []mil.Bag) ([]Rejection, error) {
	msgs := make([]wire.BagMessage, len(bags))
	for i := range bags {
		b := bags[i]
		if b.Labels != nil && !p.KeepLabels(b.ID) {
			b.Labels = nil
		}
		msgs[i] = wire.NewBagMessage(&b, ds.Name, ds.Dim, ds.Classes, p.cfg.WithInstanceLabels)
	}
	raws := make([][]byte, len(msgs))
	for i := range msgs {
		raw, err := msgs[i].Marshal(p.cfg.Format)
		if err != nil {
			return nil, fmt.Errorf("encode bag %q: %w", msgs[i].ID, err)
		}
		raws[i] = raw
	}
	// Encoded once, checked in memory: the verdict and reason DecodeBag
	// (or DecodeBagProto) would give the encoding, without decoding it
	// again.
	_, rej, err := p.publish(ctx, raws, p.cfg.Format, false, func(i int) (*wire.BagMessage, error) {
		return p.validator.CheckEncoded(&msgs[i], len(raws[i]))
	}, func(i int) string { return msgs[i].ID })
	return rej, err
}

// PublishRaw validates wire-format bags and publishes the valid ones;
// invalid ones go to the dead-letter topic (stage ingest) and are returned.
// A bag whose message exceeds the message size limit is rejected as
// oversize before anything is produced (its Rejection's error wraps a
// *TooLargeError, ErrTooLarge). It returns after every message is
// acknowledged; a message the broker refuses even so is returned as a
// rejection (the others of the call are published). accepted are the ids
// of the bags published, in the order of raws.
func (p *Publisher) PublishRaw(ctx context.Context, raws [][]byte) (accepted []string, rejected []Rejection, err error) {
	return p.publish(ctx, raws, wire.FormatJSON, p.cfg.Format == wire.FormatProtobuf, func(i int) (*wire.BagMessage, error) { return p.validator.DecodeBag(raws[i]) },
		func(i int) string {
			// A bag refused for its content is still found by its id
			// when that could be read.
			id, _ := wire.BagID(raws[i])
			return id
		})
}

// RejectSkipped rejects as oversize a line that was skipped for its
// length without being held (POST /bags): it is dead-lettered with its
// first bytes, size and SHA-256, keyed by its id when the first bytes
// show it, and counted as every rejection is. limit is the line limit it
// exceeded.
func (p *Publisher) RejectSkipped(ctx context.Context, s httpguard.Skipped, limit int) (Rejection, error) {
	id, _ := wire.BagID(s.Prefix)
	err := wire.Reject(wire.ReasonOversize, fmt.Errorf("line of %d bytes exceeds the %d-byte line limit", s.Size, limit))
	r := Rejection{ID: id, Reason: wire.ReasonOversize, Error: err.Error(), err: err}
	if p.cfg.Topics.DeadLetter != "" {
		w := p.producer(ctx)
		h := kafkaio.Headers(ctx, p.cfg.Obs.Propagator)
		d := wire.NewDeadLetter(wire.StageIngest, r.Reason, err, r.ID, "", 0, -1, s.Prefix).OfPrefix(int(s.Size), s.SHA256)
		m := kafka.Message{Topic: p.cfg.Topics.DeadLetter, Key: []byte(id), Value: d.Encode(w.ValueBudget([]byte(id), h)), Headers: h}
		refused, werr := w.Write(ctx, []kafka.Message{m})
		if werr != nil {
			return r, fmt.Errorf("publish: %w", werr)
		}
		for _, x := range refused {
			p.cfg.Obs.Logger.Error("dead letter refused by the broker; dropped", "topic", m.Topic, "err", x.Err)
		}
	}
	p.count(ctx, 0, 0, []Rejection{r})
	return r, nil
}

// publish publishes raws as PublishRaw does; check(i) validates raws[i]
// (decoding it, or checking the message it was encoded from), and idOf(i)
// is the id of a rejected raws[i] when it could be read ("" otherwise),
// the key of its dead letter. transcode: raws are JSON, to be published in
// the binary encoding of what check decoded.
// raws are in format (the configured one but for media bags, always
// JSON); with transcode they are JSON to be sent as protobuf. accepted are
// the ids of the bags published, in the order of raws.
func (p *Publisher) publish(ctx context.Context, raws [][]byte, format wire.Format, transcode bool, check func(i int) (*wire.BagMessage, error), idOf func(i int) string) (accepted []string, rejected []Rejection, err error) {
	w := p.producer(ctx)
	var out []kafka.Message
	var spans []trace.Span
	// bagOf[i] is the index in raws of out[i]; -1 for a dead letter.
	var bagOf []int
	labeled := 0
	reject := func(i int, id string, reason wire.Reason, err error, span trace.Span) {
		span.RecordError(err)
		span.SetStatus(codes.Error, string(reason))
		span.End()
		rejected = append(rejected, Rejection{Index: i, ID: id, Reason: reason, Error: err.Error(), err: err})
		if p.cfg.Topics.DeadLetter != "" {
			h := kafkaio.Headers(ctx, p.cfg.Obs.Propagator)
			if !transcode {
				// raws are in the configured format.
				h = kafkaio.WithOriginal(h, format.ContentType())
			}
			d := wire.NewDeadLetter(wire.StageIngest, reason, err, id, "", 0, -1, raws[i]).Encode(w.ValueBudget([]byte(id), h))
			out = append(out, kafka.Message{Topic: p.cfg.Topics.DeadLetter, Key: []byte(id), Value: d, Headers: h})
			bagOf = append(bagOf, -1)
		}
	}
	for i, raw := range raws {
		// Messaging semantic conventions: span name "{operation} {destination}".
		sctx, span := p.tracer.Start(ctx, "send "+p.cfg.Topics.Annotate, trace.WithSpanKind(trace.SpanKindProducer))
		if span.IsRecording() {
			// Built only for a span that keeps them (no sampler of the
			// services reads start attributes).
			span.SetAttributes(semconv.MessagingSystemKafka, semconv.MessagingOperationTypeSend, semconv.MessagingOperationName("send"),
				semconv.MessagingDestinationName(p.cfg.Topics.Annotate))
		}
		bm, err := check(i)
		if err != nil {
			reason, _ := wire.ReasonOf(err)
			reject(i, idOf(i), reason, err, span)
			continue
		}
		if span.IsRecording() {
			span.SetAttributes(attribute.String("bag.id", bm.ID), attribute.Bool("bag.labeled", bm.Labels != nil),
				attribute.Int("bag.instances", bm.Bag().Len()))
		}
		h := kafkaio.HeadersAs(sctx, p.cfg.Obs.Propagator, format)
		if transcode {
			h = kafkaio.HeadersAs(sctx, p.cfg.Obs.Propagator, p.cfg.Format)
		}
		if transcode {
			raw = bm.AppendProto(nil)
		}
		m := kafka.Message{Topic: p.cfg.Topics.Annotate, Key: []byte(bm.ID), Value: raw, Headers: h}
		if !w.Fits(m) {
			err := wire.Reject(wire.ReasonOversize, &TooLargeError{ID: bm.ID, Size: kafkaio.RecordSize(m), Limit: kafkaio.RecordLimit(w.MaxMessageBytes())})
			reject(i, bm.ID, wire.ReasonOversize, err, span)
			continue
		}
		out = append(out, m)
		bagOf = append(bagOf, i)
		if bm.Labels != nil && p.cfg.Topics.Train != "" {
			labeled++
			out = append(out, kafka.Message{Topic: p.cfg.Topics.Train, Key: []byte(bm.ID), Value: raw, Headers: h})
			bagOf = append(bagOf, i)
		}
		spans = append(spans, span)
	}
	refused, err := w.Write(ctx, out)
	for _, s := range spans {
		if err != nil {
			s.RecordError(err)
			s.SetStatus(codes.Error, "produce failed")
		}
		s.End()
	}
	if err != nil {
		return nil, rejected, fmt.Errorf("publish: %w", err)
	}
	// A bag the broker refuses (a topic limit lowered since the producer
	// asked, say) is rejected; its other copy may be out, which a retry
	// of the bag makes whole.
	gone := map[int]bool{}
	for _, r := range refused {
		i := bagOf[r.Index]
		if i < 0 {
			p.cfg.Obs.Logger.Error("dead letter refused by the broker; dropped", "topic", out[r.Index].Topic, "err", r.Err)
			continue
		}
		if gone[i] {
			continue
		}
		gone[i] = true
		reason := r.Reason()
		rerr := wire.Reject(reason, fmt.Errorf("refused by the broker: %w", r.Err))
		rejected = append(rejected, Rejection{Index: i, ID: string(out[r.Index].Key), Reason: reason, Error: rerr.Error(), err: rerr})
	}
	slices.SortFunc(rejected, func(a, b Rejection) int { return a.Index - b.Index })
	// A bag's records are adjacent in out, its annotate record first.
	accepted = make([]string, 0, len(spans)-len(gone))
	last := -1
	for k, i := range bagOf {
		if i < 0 || i == last || gone[i] {
			continue
		}
		last = i
		accepted = append(accepted, string(out[k].Key))
	}
	p.count(ctx, len(spans)-len(gone), labeled, rejected)
	return accepted, rejected, nil
}

// count adds to the stats and the metrics.
func (p *Publisher) count(ctx context.Context, published, labeled int, rejected []Rejection) {
	p.mu.Lock()
	p.stats.Published += published
	p.stats.Labeled += labeled
	for _, r := range rejected {
		p.stats.Rejected[r.Reason]++
	}
	p.mu.Unlock()
	p.m.published.Add(ctx, int64(published))
	p.m.labeled.Add(ctx, int64(labeled))
	for _, r := range rejected {
		p.m.rejected.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", string(r.Reason))))
	}
}

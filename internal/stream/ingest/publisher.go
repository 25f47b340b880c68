package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

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
	// MaxMessageBytes rejects larger bags (oversize); <= 0: no limit.
	MaxMessageBytes int
	Obs             service.Observability
}

// Publisher validates bags and publishes them. It is safe for concurrent use.
type Publisher struct {
	cfg       PublisherConfig
	w         *kafka.Writer
	validator *wire.Validator
	tracer    trace.Tracer

	mu    sync.Mutex
	stats IngestStats
}

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
	return &Publisher{cfg: cfg, w: kafkaio.NewWriter(cfg.Brokers, cfg.Security), validator: v, tracer: cfg.Obs.Tracer.Tracer(service.Instrumentation),
		stats: IngestStats{Rejected: map[wire.Reason]int{}}}, nil
}

// Close flushes and closes the producer.
func (p *Publisher) Close() error { return p.w.Close() }

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
}

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
		raw, err := json.Marshal(msgs[i])
		if err != nil {
			return nil, fmt.Errorf("encode bag %q: %w", msgs[i].ID, err)
		}
		raws[i] = raw
	}
	return p.PublishRaw(ctx, raws)
}

// PublishRaw validates wire-format bags and publishes the valid ones;
// invalid ones go to the dead-letter topic (stage ingest) and are returned.
// It returns after every message is acknowledged.
func (p *Publisher) PublishRaw(ctx context.Context, raws [][]byte) ([]Rejection, error) {
	var out []kafka.Message
	var spans []trace.Span
	var rejected []Rejection
	labeled := 0
	for i, raw := range raws {
		sctx, span := p.tracer.Start(ctx, "ingest", trace.WithSpanKind(trace.SpanKindProducer))
		bm, err := p.validator.DecodeBag(raw)
		if err != nil {
			reason, _ := wire.ReasonOf(err)
			span.RecordError(err)
			span.SetStatus(codes.Error, string(reason))
			span.End()
			rejected = append(rejected, Rejection{Index: i, Reason: reason, Error: err.Error()})
			if p.cfg.Topics.DeadLetter != "" {
				out = append(out, kafka.Message{Topic: p.cfg.Topics.DeadLetter, Value: wire.EncodeDeadLetter(wire.StageIngest, reason, err, "", "", 0, -1, raw),
					Headers: kafkaio.Headers(ctx, p.cfg.Obs.Propagator)})
			}
			continue
		}
		span.SetAttributes(attribute.String("bag.id", bm.ID), attribute.Bool("bag.labeled", bm.Labels != nil),
			attribute.Int("bag.instances", len(bm.Instances)))
		h := kafkaio.Headers(sctx, p.cfg.Obs.Propagator)
		out = append(out, kafka.Message{Topic: p.cfg.Topics.Annotate, Key: []byte(bm.ID), Value: raw, Headers: h})
		if bm.Labels != nil && p.cfg.Topics.Train != "" {
			labeled++
			out = append(out, kafka.Message{Topic: p.cfg.Topics.Train, Key: []byte(bm.ID), Value: raw, Headers: h})
		}
		spans = append(spans, span)
	}
	err := kafkaio.WriteAcked(ctx, p.w, out)
	for _, s := range spans {
		if err != nil {
			s.RecordError(err)
			s.SetStatus(codes.Error, "produce failed")
		}
		s.End()
	}
	if err != nil {
		return rejected, fmt.Errorf("publish: %w", err)
	}
	p.mu.Lock()
	p.stats.Published += len(spans)
	p.stats.Labeled += labeled
	for _, r := range rejected {
		p.stats.Rejected[r.Reason]++
	}
	p.mu.Unlock()
	return rejected, nil
}

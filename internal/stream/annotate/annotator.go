package annotate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/admission"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/telemetry"
	"github.com/mimlstream/mimlstream/schemas"
)

// DefaultLinger is the annotator's linger (--linger): 100 µs, not
// kafkaio.DefaultLinger's 1 ms. ingest's writes of a light stream are
// single bags that a linger gathers into requests; the annotator hands
// its writer each batch's outputs in one call, so waiting longer only
// merges the writes of concurrent batches. In BenchmarkPipeline (JSON, 4
// interleaved A/B rounds of 20 passes, ingest at 1 ms in both) it took
// the median latency at a tenth of the rate from 3.3–3.6 to 2.2–2.4 ms
// and at half the rate from 5.4–6.4 to 4.3–4.9 ms, with the end-to-end
// rate and CPU per bag within the rounds' noise.
const DefaultLinger = 100 * time.Microsecond

// DefaultMaxBatchBytes is the default AnnotatorConfig.MaxBatchBytes: 8 MiB,
// far above a full batch of the benchmarks' bags (64 MSCV2 bags of 48
// features take well under 1 MiB), so it only closes batches of large bags
// early.
const DefaultMaxBatchBytes = 8 << 20

// AnnotatorConfig configures an annotator.
type AnnotatorConfig struct {
	Brokers []string
	// Security secures the Kafka connections (zero: plaintext).
	Security kafkasec.Conn
	GroupID  string
	Topics   wire.Topics
	// Name identifies this instance in annotations and logs.
	Name string
	// Kinds decodes the model blobs; Store serves them.
	Kinds *models.Registry
	Store ModelStore
	// Cache, when non-nil, holds mapped instance vectors for models that
	// implement models.FeatureMapper.
	Cache FeatureCache
	// CacheTimeout bounds each call to Cache; a call that fails or times
	// out turns the cache off for a few seconds (the mapping is computed
	// instead). <= 0 means DefaultCacheTimeout.
	CacheTimeout time.Duration
	// Workers annotating a batch in parallel; <= 0 means all cores.
	Workers int
	// BatchSize bounds a batch. A batch takes the messages that have
	// arrived; while the annotation stage is busy with earlier batches it
	// goes on gathering, until the stage is free or at most BatchWait (an
	// idle annotator serves a lone bag at once).
	BatchSize int
	BatchWait time.Duration
	// MaxInFlight bounds the batches between their fetch and the
	// acknowledgement of their outputs: while some are being written the
	// next ones are fetched and annotated. <= 0 means 4.
	MaxInFlight int
	// MaxBatchBytes closes a batch once its messages' bytes reach it, so
	// the batches in flight hold about MaxInFlight times this much however
	// large the bags (BatchSize messages of 1 MiB each were 64 MiB a
	// batch). <= 0 means DefaultMaxBatchBytes.
	MaxBatchBytes int
	// CommitInterval is the period of the offset commits (of the messages
	// whose outputs, and those of every message before them, are
	// acknowledged); <= 0 means 200 ms. A crash redelivers at most what
	// arrived in the last interval, plus the batches in flight.
	CommitInterval time.Duration
	// Compression compresses the outputs' record batches (zero: none).
	Compression kafka.Compression
	// Linger is how long a partial produce request of outputs waits for
	// more records (kafkaio.ProducerConfig.Linger; <= 0: DefaultLinger).
	Linger time.Duration
	// Format encodes the annotations (zero: JSON). Bags are decoded in the
	// format each one's content-type header names, whatever this says;
	// dead letters are JSON.
	Format wire.Format
	// PollInterval is the period of the registry check that backs up the
	// pub/sub notification (which is at most once).
	PollInterval time.Duration
	// ProbeInterval is the period of the input probe: the brokers asked
	// where the input topic's partitions are; while they cannot say (the
	// brokers down, the topic missing), /readyz answers 503.
	// <= 0 means DefaultProbeInterval.
	ProbeInterval time.Duration
	// MaxMessageBytes dead-letters larger messages; <= 0 means no limit.
	// It also bounds every produce request and record, together with the
	// max.message.bytes the broker reports for the output topics (the
	// smaller wins; kafkaio.DefaultMaxMessageBytes when <= 0).
	MaxMessageBytes int
	// MaxOutputBytes bounds the value of an annotation or a dead letter;
	// <= 0 means the producer's limit less room for the key and headers.
	MaxOutputBytes int
	// StallAfter is how long the outputs of a batch may keep failing to be
	// written before the annotator reports itself stalled (/readyz 503,
	// the stalled gauge, an ERROR log), and how long every fetch may fail
	// before /readyz answers 503 (fetchhealth.go); <= 0 means 30 s.
	StallAfter time.Duration
	// DrainTimeout bounds the work after shutdown is requested: finishing,
	// writing and committing the batches in flight.
	DrainTimeout time.Duration
	// SessionTimeout and HeartbeatInterval tune how fast the group notices
	// a dead member.
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	// StartOffset is where the group starts on a partition it has no
	// committed offset for (zero: earliest).
	StartOffset kafkaio.StartOffset
	// Quality, when non-nil, scores the served model (and a shadow
	// candidate) on the labeled bags (quality.Tracker).
	Quality LiveScorer
	Obs     service.Observability
}

// LiveScorer is told of every bag annotated, with the model that served it.
type LiveScorer interface {
	Observe(ctx context.Context, m models.Model, meta featurestore.VersionMeta, bag *mil.Bag)
}

func (c *AnnotatorConfig) defaults() {
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 64
	}
	if c.BatchWait <= 0 {
		c.BatchWait = 20 * time.Millisecond
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 4
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.CacheTimeout <= 0 {
		c.CacheTimeout = DefaultCacheTimeout
	}
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = DefaultProbeInterval
	}
	if c.CommitInterval <= 0 {
		c.CommitInterval = 200 * time.Millisecond
	}
	if c.Linger <= 0 {
		c.Linger = DefaultLinger
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 5 * time.Second
	}
	if c.StallAfter <= 0 {
		c.StallAfter = 30 * time.Second
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 15 * time.Second
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = c.SessionTimeout / 5
	}
	if c.GroupID == "" {
		c.GroupID = "annotator"
	}
	c.Obs = c.Obs.WithDefaults()
}

// Annotator consumes bags, annotates them with the registry's current model
// and writes annotations and dead letters, with several batches in flight
// (see consume). An offset is committed only after the outputs of every
// message up to it are acknowledged (at-least-once; outputs are keyed by
// bag id so duplicates are idempotent downstream).
type Annotator struct {
	cfg       AnnotatorConfig
	validator *wire.Validator
	cache     *cachedMapper
	tracer    trace.Tracer
	model     atomic.Pointer[servedModel]
	consuming atomic.Bool
	// source is the input probe's verdict (watchSource).
	source atomic.Pointer[sourceState]
	// fetches is the run of failed fetches, for readiness (fetchhealth.go).
	fetches fetchFailures
	m       annotatorMetrics
	lag     *lagTracker
	// maxOut bounds the value of an output: MaxOutputBytes, or the
	// producer's limit less keyAndHeaders once Run knows it.
	maxOut atomic.Int64
	// producer is set while Run consumes; batchParts are the partitions of
	// the batch being written, for the stall report.
	producer   atomic.Pointer[kafkaio.Producer]
	batchParts atomic.Pointer[[]int]
	// refused is the registry's current version when it cannot be served.
	refused atomic.Pointer[refusal]
	// contract is set while the served model's input contract (dimension,
	// classes) differs from the one served before a change: the swap of a
	// model promoted by force over an incompatible one. The annotator
	// keeps serving (bags of the new contract are annotated, the others
	// dead-lettered) and says so in the log, the model_contract_changed
	// gauge and /readyz until a model of the baseline's contract is back.
	contract atomic.Pointer[contractChange]
}

// contractChange is a served model whose dimension or classes differ from
// those of the baseline, the model served before the change.
type contractChange struct {
	baseline featurestore.VersionMeta
	served   featurestore.VersionMeta
	err      error // featurestore.Compatible(baseline, served)
}

// nextContract returns the contract state after a swap from old to next
// (old nil: the first model, which is its own baseline). A change keeps
// its baseline through further swaps, so a rollback to the baseline's
// contract clears it while a refit on the changed contract does not.
func nextContract(cur *contractChange, old *featurestore.VersionMeta, next featurestore.VersionMeta) *contractChange {
	if cur != nil {
		if featurestore.Compatible(cur.baseline, next) == nil {
			return nil
		}
		return &contractChange{baseline: cur.baseline, served: next, err: featurestore.Compatible(cur.baseline, next)}
	}
	if old == nil {
		return nil
	}
	if err := featurestore.Compatible(*old, next); err != nil {
		return &contractChange{baseline: *old, served: next, err: err}
	}
	return nil
}

// refusal is a current model version the annotator refuses to serve.
type refusal struct {
	version string // "" when the store cannot name it
	err     error
}

// keyAndHeaders is the room left in a record for the key (a bag id: at
// most 256 bytes), the headers (schema version, content type, W3C trace
// context) and the record framing.
const keyAndHeaders = 2048

type annotatorMetrics struct {
	bags        metric.Int64Counter
	deadLetters metric.Int64Counter
	latency     metric.Float64Histogram
	e2e         metric.Float64Histogram
	swaps       metric.Int64Counter
}

// NewAnnotator validates the configuration and registers the metrics.
func NewAnnotator(cfg AnnotatorConfig) (*Annotator, error) {
	cfg.defaults()
	if len(cfg.Brokers) == 0 || cfg.Kinds == nil || cfg.Store == nil {
		return nil, errors.New("annotator: brokers, model kinds and model store are required")
	}
	if cfg.Topics.Annotate == "" || cfg.Topics.Annotations == "" || cfg.Topics.DeadLetter == "" {
		return nil, errors.New("annotator: annotate, annotations and dead-letter topics are required")
	}
	v, err := wire.NewValidator(cfg.MaxMessageBytes)
	if err != nil {
		return nil, err
	}
	a := &Annotator{cfg: cfg, validator: v, tracer: cfg.Obs.Tracer.Tracer(service.Instrumentation), lag: newLagTracker(30 * time.Second)}
	a.maxOut.Store(int64(a.outputLimit(kafkaio.DefaultMaxMessageBytes)))
	if cfg.Cache != nil {
		a.cache = &cachedMapper{cache: cfg.Cache, log: cfg.Obs.Logger, cooldown: 5 * time.Second, timeout: cfg.CacheTimeout}
	}
	if err := a.initMetrics(); err != nil {
		return nil, fmt.Errorf("annotator metrics: %w", err)
	}
	return a, nil
}

func (a *Annotator) initMetrics() error {
	mt := a.cfg.Obs.Meter.Meter(service.Instrumentation)
	var err error
	var errs []error
	a.m.bags, err = mt.Int64Counter("mimlstream.annotator.bags", metric.WithDescription("Bags annotated."), metric.WithUnit("{bag}"))
	errs = append(errs, err)
	a.m.deadLetters, err = mt.Int64Counter("mimlstream.annotator.dead_letters", metric.WithDescription("Messages dead-lettered, by reason."), metric.WithUnit("{message}"))
	errs = append(errs, err)
	a.m.latency, err = mt.Float64Histogram("mimlstream.annotator.latency", metric.WithDescription("Decode and annotate time per bag."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1))
	errs = append(errs, err)
	a.m.e2e, err = mt.Float64Histogram("mimlstream.annotator.pipeline_latency", metric.WithDescription("Time from the bag's produce timestamp to its annotation's acknowledgement."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	errs = append(errs, err)
	a.m.swaps, err = mt.Int64Counter("mimlstream.annotator.model_swaps", metric.WithUnit("{swap}"), metric.WithDescription("Model versions loaded (model_info names the one served)."))
	errs = append(errs, err)
	info, err := mt.Int64ObservableGauge("mimlstream.annotator.model_info", metric.WithDescription("1, labeled with the version and kind of the model served: one series per annotator, whatever the number of versions."))
	errs = append(errs, err)
	lag, err := mt.Int64ObservableGauge("mimlstream.annotator.consumer_lag", metric.WithDescription("Messages behind the end of each assigned partition, by topic and partition (from the high-water mark of the last message read)."), metric.WithUnit("{message}"))
	errs = append(errs, err)
	stalled, err := mt.Int64ObservableGauge("mimlstream.annotator.stalled", metric.WithDescription("1 when the outputs of a batch have failed to be written for longer than the stall bound (its partitions do not advance), else 0."))
	errs = append(errs, err)
	retrying, err := mt.Float64ObservableGauge("mimlstream.annotator.write_retry", metric.WithDescription("How long the outputs of the batch in flight have been failing to be written (0: not failing)."), metric.WithUnit("s"))
	errs = append(errs, err)
	contract, err := mt.Int64ObservableGauge("mimlstream.annotator.model_contract_changed", metric.WithDescription("1 while the model served has another input dimension or class list than the model served before it changed (a promotion forced over an incompatible version): bags of the old contract go to dead letters; else 0."))
	errs = append(errs, err)
	refused, err := mt.Int64ObservableGauge("mimlstream.annotator.model_refused", metric.WithDescription("1 when the registry's current model version cannot be served (corrupt, undecodable, refused by the registry); the version label names it."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Counters exist from the start, every mode and reason included, so
	// rates and alerts are defined before the first bag or dead letter.
	ctx := context.Background()
	for _, m := range []models.Mode{models.Inductive, models.Transductive} {
		a.m.bags.Add(ctx, 0, metric.WithAttributes(attribute.String("mode", string(m))))
	}
	for _, r := range wire.Reasons() {
		a.m.deadLetters.Add(ctx, 0, metric.WithAttributes(attribute.String("reason", string(r))))
	}
	a.m.swaps.Add(ctx, 0)
	_, err = mt.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if s := a.model.Load(); s != nil {
			o.ObserveInt64(info, 1, metric.WithAttributes(attribute.String("version", s.meta.Version), attribute.String("kind", s.meta.Kind)))
		}
		for p, n := range a.lag.Partitions(time.Now()) {
			o.ObserveInt64(lag, n, metric.WithAttributes(attribute.String("topic", a.cfg.Topics.Annotate), attribute.Int("partition", p)))
		}
		var isStalled int64
		var retry float64
		if p := a.producer.Load(); p != nil {
			if s, ok := p.Retrying(); ok {
				retry = time.Since(s.Since).Seconds()
			}
			if _, ok := p.Stall(); ok {
				isStalled = 1
			}
		}
		o.ObserveInt64(stalled, isStalled)
		o.ObserveFloat64(retrying, retry)
		if r := a.refused.Load(); r != nil {
			o.ObserveInt64(refused, 1, metric.WithAttributes(attribute.String("version", r.version)))
		} else {
			o.ObserveInt64(refused, 0)
		}
		var changed int64
		if a.contract.Load() != nil {
			changed = 1
		}
		o.ObserveInt64(contract, changed)
		return nil
	}, info, lag, stalled, retrying, refused, contract)
	return err
}

// outputLimit is the bound of an output's value under a producer limit.
func (a *Annotator) outputLimit(maxMessageBytes int) int {
	n := kafkaio.RecordLimit(maxMessageBytes) - keyAndHeaders
	if a.cfg.MaxOutputBytes > 0 {
		n = min(n, a.cfg.MaxOutputBytes)
	}
	return n
}

// ModelVersion returns the version being served, or "" before the first load.
func (a *Annotator) ModelVersion() string {
	if s := a.model.Load(); s != nil {
		return s.meta.Version
	}
	return ""
}

// Ready reports whether the annotator holds a model, is consuming, and is
// not stalled.
func (a *Annotator) Ready() bool {
	ready, _ := a.readiness()
	return ready
}

// Stalled reports the write that has kept failing for longer than
// StallAfter, if any.
func (a *Annotator) Stalled() (kafkaio.Stall, bool) {
	if p := a.producer.Load(); p != nil {
		return p.Stall()
	}
	return kafkaio.Stall{}, false
}

// Refused returns the registry's current version the annotator refuses to
// serve and why ("" and nil when it serves the current version or has
// refused none). The version is "" when the store cannot name it.
func (a *Annotator) Refused() (string, error) {
	if r := a.refused.Load(); r != nil {
		return r.version, r.err
	}
	return "", nil
}

// readiness says whether the annotator is ready and why (the /readyz body):
// a refused current version leaves it ready while it serves the model it
// holds, and the body says so.
func (a *Annotator) readiness() (bool, string) {
	var refusedLine string
	if r := a.refused.Load(); r != nil {
		v := r.version
		if v == "" {
			v = "(unnamed)"
		}
		refusedLine = fmt.Sprintf("current model version %s refused: %v", v, r.err)
	}
	if s, ok := a.Stalled(); ok {
		parts := []int{}
		if p := a.batchParts.Load(); p != nil {
			parts = *p
		}
		return false, fmt.Sprintf("not ready: stalled: the outputs of the batch from partitions %v have failed to be written for %v (%d messages to %v): %v",
			parts, time.Since(s.Since).Round(time.Second), s.Messages, s.Topics, s.Err)
	}
	if a.model.Load() == nil {
		msg := "not ready: no model loaded"
		if refusedLine != "" {
			msg += "; " + refusedLine
		}
		return false, msg
	}
	if !a.consuming.Load() {
		return false, "not ready: not consuming"
	}
	if p := a.sourceProblem(); p != "" {
		return false, p
	}
	if p := a.fetches.problem(a.cfg.StallAfter, a.cfg.Topics.Annotate); p != "" {
		return false, p
	}
	msg := "ok " + a.ModelVersion()
	if c := a.contract.Load(); c != nil {
		msg += fmt.Sprintf("\nWARNING: input contract changed: serving %s whose %v; bags of %s's contract (dimension %d) go to dead letters",
			c.served.Version, c.err, c.baseline.Version, c.baseline.Dim)
	}
	if refusedLine != "" {
		msg += "\n" + refusedLine + "; serving " + a.ModelVersion()
	}
	if s, ok := a.cfg.Quality.(shadowReporter); ok {
		if v := s.Shadow(); v != "" {
			msg += "\nshadow candidate " + v + ": scored beside " + a.ModelVersion() + " on the labeled bags"
		}
	}
	return true, msg
}

// shadowReporter is a LiveScorer that runs a candidate in shadow
// (quality.Tracker does); /readyz names the candidate.
type shadowReporter interface {
	Shadow() string
}

// Handler serves /healthz, /readyz and, when metrics is non-nil, /metrics.
// /readyz answers 200 "ok VERSION" while the annotator serves a model and
// its writes go through (further lines warn of a changed input contract
// and name a refused current version),
// and 503 with the reason otherwise: no model, not consuming, or stalled.
func (a *Annotator) Handler(metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ready, msg := a.readiness()
		if !ready {
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, msg)
	})
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	return mux
}

// Run consumes until ctx is done, then drains the batches in flight,
// commits them and leaves the group. It returns nil on a clean shutdown.
func (a *Annotator) Run(ctx context.Context) error {
	log := a.cfg.Obs.Logger.With("annotator", a.cfg.Name)
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatch()
	loaded := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		newModelWatcher(a, loaded).run(watchCtx, ctx)
	}()
	defer wg.Wait()
	defer stopWatch()

	// No model, no consumption: bags stay in Kafka rather than being
	// dead-lettered or annotated by nothing.
	select {
	case <-loaded:
	case <-ctx.Done():
		return nil
	}

	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           a.cfg.Brokers,
		Dialer:            a.cfg.Security.Dialer(),
		GroupID:           a.cfg.GroupID,
		Topic:             a.cfg.Topics.Annotate,
		MinBytes:          1,
		MaxBytes:          64 << 20,
		MaxWait:           100 * time.Millisecond,
		StartOffset:       a.cfg.StartOffset.Offset(),
		CommitInterval:    0, // synchronous commits, after outputs are acknowledged
		SessionTimeout:    a.cfg.SessionTimeout,
		HeartbeatInterval: a.cfg.HeartbeatInterval,
		RebalanceTimeout:  a.cfg.SessionTimeout,
		JoinGroupBackoff:  200 * time.Millisecond,
		ReadBackoffMin:    10 * time.Millisecond,
		ReadBackoffMax:    100 * time.Millisecond,
		// Group membership changes (joins, rebalances, assignments) are
		// what an operator needs when partitions stall.
		Logger:      kafkaio.Logger(log, slog.LevelDebug),
		ErrorLogger: kafkaio.Logger(log, slog.LevelWarn),
	})
	limit, err := kafkaio.MaxMessageBytes(ctx, a.cfg.Brokers, a.cfg.Security, a.cfg.MaxMessageBytes, a.cfg.Topics.Annotations, a.cfg.Topics.DeadLetter)
	if err != nil {
		log.Warn("the cluster does not report the topics' max.message.bytes; keeping to the configured limit", "limit", limit, "err", err)
	}
	a.maxOut.Store(int64(a.outputLimit(limit)))
	w := kafkaio.NewProducer(kafkaio.ProducerConfig{Brokers: a.cfg.Brokers, Security: a.cfg.Security, MaxMessageBytes: limit,
		StallAfter: a.cfg.StallAfter, Compression: a.cfg.Compression, Linger: a.cfg.Linger, Logger: log})
	a.producer.Store(w)
	defer func() {
		a.consuming.Store(false)
		if err := r.Close(); err != nil {
			log.Warn("close reader", "err", err)
		}
		if err := w.Close(); err != nil {
			log.Warn("close writer", "err", err)
		}
	}()
	probeCtx, stopProbe := context.WithCancel(ctx)
	var probe sync.WaitGroup
	probe.Go(func() { a.watchSource(probeCtx) })
	defer probe.Wait()
	defer stopProbe()
	a.consuming.Store(true)
	log.Info("consuming", "topic", a.cfg.Topics.Annotate, "group", a.cfg.GroupID, "model", a.ModelVersion(), "max_message_bytes", limit)

	return a.consume(ctx, r, w)
}

// output is what one input message produced.
type output struct {
	msg     kafka.Message
	produce trace.Span
	span    trace.Span
	dead    bool
	reason  wire.Reason
	mode    models.Mode
	latency time.Duration
}

// processBatch turns a batch of input messages into their outputs
// (annotations or dead letters), in order, with one model snapshot, so a
// hot swap lands between batches, never inside one. Workers process the
// messages in parallel.
func (a *Annotator) processBatch(ctx context.Context, sm *servedModel, batch []kafka.Message) []output {
	outs := make([]output, len(batch))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(a.cfg.Workers, len(batch)) {
		wg.Go(func() {
			for i := range work {
				outs[i] = a.process(ctx, sm, batch[i])
			}
		})
	}
	for i := range batch {
		work <- i
	}
	close(work)
	wg.Wait()
	return outs
}

// writeBatch writes the outputs of a batch, waits for their
// acknowledgement and records the batch's metrics. It fails only when ctx
// ends first; the caller then must not commit the batch.
func (a *Annotator) writeBatch(ctx context.Context, w *kafkaio.Producer, batch []kafka.Message, outs []output) error {
	err := a.writeOutputs(ctx, w, batch, outs)
	now := time.Now()
	for i := range outs {
		o := &outs[i]
		if err != nil {
			o.produce.RecordError(err)
			o.produce.SetStatus(codes.Error, "produce failed")
		}
		o.produce.End()
		o.span.End()
	}
	if err != nil {
		return fmt.Errorf("write outputs: %w", err)
	}
	for i, o := range outs {
		if o.dead {
			a.m.deadLetters.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", string(o.reason))))
			continue
		}
		a.m.bags.Add(ctx, 1, metric.WithAttributes(attribute.String("mode", string(o.mode))))
		a.m.latency.Record(ctx, o.latency.Seconds())
		if ts := batch[i].Time; !ts.IsZero() {
			a.m.e2e.Record(ctx, now.Sub(ts).Seconds())
		}
	}
	for _, m := range batch {
		a.lag.Observe(m.Partition, m.HighWaterMark-m.Offset-1, now)
	}
	return nil
}

// writeOutputs writes the outputs of a batch and waits for their
// acknowledgement. An output the broker refuses for good is replaced by the
// dead letter of its input, with the refusal as the reason; a dead letter
// refused in turn is logged and dropped, so one record never holds its
// partition back.
func (a *Annotator) writeOutputs(ctx context.Context, w *kafkaio.Producer, batch []kafka.Message, outs []output) error {
	idx := make([]int, len(outs)) // outputs still to write
	for i := range idx {
		idx[i] = i
	}
	for len(idx) > 0 {
		msgs := make([]kafka.Message, len(idx))
		for j, i := range idx {
			msgs[j] = outs[i].msg
		}
		refused, err := w.Write(ctx, msgs)
		if err != nil {
			return err
		}
		written := idx
		idx = nil
		for _, rf := range refused {
			i := written[rf.Index]
			o := &outs[i]
			in := batch[i]
			if o.msg.Topic == a.cfg.Topics.DeadLetter {
				// Already the smallest record the input can leave: the
				// original stays where its offset says.
				a.cfg.Obs.Logger.Error("dead letter refused by the broker; dropped", "key", string(in.Key), "partition", in.Partition, "offset", in.Offset, "err", rf.Err)
				continue
			}
			reason := rf.Reason()
			a.cfg.Obs.Logger.Warn("output refused by the broker; dead-lettering its input", "topic", o.msg.Topic, "key", string(in.Key),
				"partition", in.Partition, "offset", in.Offset, "reason", reason, "err", rf.Err)
			o.dead, o.reason = true, reason
			o.msg.Topic = a.cfg.Topics.DeadLetter
			o.msg.Value = a.deadLetter(in, reason, fmt.Errorf("output refused by the broker: %w", rf.Err))
			o.msg.Headers = kafkaio.WithOriginal(kafkaio.WithContentType(o.msg.Headers, wire.FormatJSON), kafkaio.ContentType(in.Headers))
			o.span.SetStatus(codes.Error, string(reason))
			idx = append(idx, i)
		}
	}
	return nil
}

// process turns one input message into an annotation or a dead letter.
func (a *Annotator) process(ctx context.Context, sm *servedModel, in kafka.Message) output {
	p := a.cfg.Obs.Propagator
	ctx = telemetry.Extract(ctx, p, in.Headers)
	// Messaging semantic conventions: span name "{operation} {destination}".
	ctx, span := a.tracer.Start(ctx, "process "+in.Topic, trace.WithSpanKind(trace.SpanKindConsumer))
	if span.IsRecording() {
		// Built only for a span that keeps them: for every bag, they were
		// a tenth of the work outside the model with tracing off. (No
		// sampler of the services reads start attributes.)
		span.SetAttributes(
			semconv.MessagingSystemKafka,
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("process"),
			semconv.MessagingDestinationName(in.Topic),
			semconv.MessagingDestinationPartitionID(strconv.Itoa(in.Partition)),
			semconv.MessagingConsumerGroupName(a.cfg.GroupID),
			semconv.MessagingKafkaOffset(int(in.Offset)),
			semconv.MessagingKafkaMessageKey(string(in.Key)),
			attribute.String("model.version", sm.meta.Version),
		)
	}
	start := time.Now()
	ann, mode, bm, err := a.annotate(ctx, sm, in)
	latency := time.Since(start)
	if err == nil && a.cfg.Quality != nil {
		// Live quality: the inductive prediction of a labeled bag, scored
		// against its labels (outside the latency measured above).
		a.cfg.Quality.Observe(ctx, sm.model, sm.meta, bm.Bag())
	}

	o := output{span: span, mode: mode, latency: latency}
	var value []byte
	topic := a.cfg.Topics.Annotations
	if err != nil {
		reason, isInput := admission.Reason(err)
		if !isInput {
			reason = wire.ReasonModelError
		}
		o.dead, o.reason, topic = true, reason, a.cfg.Topics.DeadLetter
		span.RecordError(err)
		span.SetStatus(codes.Error, string(reason))
		value = a.deadLetter(in, reason, err)
	} else {
		var ingested *time.Time
		if !in.Time.IsZero() {
			t := in.Time.UTC()
			ingested = &t
		}
		out := wire.AnnotationMessage{
			SchemaVersion: schemas.Version, BagID: bm.ID, Source: bm.Source,
			Model: sm.meta.Kind, ModelVersion: sm.meta.Version, ModelID: sm.meta.ID, Mode: string(mode), Classes: sm.meta.Classes,
			InstanceLabels: ann.InstanceLabels, InstanceScores: ann.InstanceScores,
			BagLabels: nonNilInts(ann.BagLabels), BagScores: nonNilFloats(ann.BagScores),
			LatencyMS: float64(latency.Microseconds()) / 1000, IngestedAt: ingested,
			AnnotatedAt: time.Now().UTC(), Annotator: a.cfg.Name,
			// A media bag's provenance, as it came: the annotation names
			// the photo or document and the regions its labels paint.
			Media: bm.Media, Featurizer: bm.Featurizer, Regions: bm.Regions,
		}
		maxOut := int(a.maxOut.Load())
		value, err = out.MarshalAs(a.cfg.Format)
		if err == nil && len(value) > maxOut && out.InstanceScores != nil {
			// The per-instance scores of a very large bag would make an
			// annotation the broker refuses; the labels still fit.
			out.InstanceScores = nil
			value, err = out.MarshalAs(a.cfg.Format)
			span.AddEvent("instance scores dropped: annotation too large")
		}
		switch {
		case err != nil:
			// Scores that JSON cannot carry (NaN) are a model fault.
			o.dead, o.reason, topic = true, wire.ReasonModelError, a.cfg.Topics.DeadLetter
			value = a.deadLetter(in, wire.ReasonModelError, fmt.Errorf("encode annotation: %w", err))
		case len(value) > maxOut:
			o.dead, o.reason, topic = true, wire.ReasonOversize, a.cfg.Topics.DeadLetter
			value = a.deadLetter(in, wire.ReasonOversize, fmt.Errorf("annotation of %d bytes exceeds the %d-byte output limit", len(value), maxOut))
		}
	}
	pctx, produce := a.tracer.Start(ctx, "send "+topic, trace.WithSpanKind(trace.SpanKindProducer))
	if produce.IsRecording() {
		produce.SetAttributes(semconv.MessagingSystemKafka, semconv.MessagingOperationTypeSend, semconv.MessagingOperationName("send"),
			semconv.MessagingDestinationName(topic))
	}
	o.produce = produce
	format := wire.FormatJSON
	if !o.dead {
		format = a.cfg.Format
	}
	h := kafkaio.HeadersAs(pctx, p, format)
	if o.dead {
		h = kafkaio.WithOriginal(h, kafkaio.ContentType(in.Headers))
	}
	id := ""
	var re *wire.RejectError
	switch {
	case bm != nil:
		id = bm.ID
	case errors.As(err, &re):
		id = re.BagID
	}
	o.msg = kafka.Message{Topic: topic, Key: wire.OutputKey(id, in.Topic, in.Partition, in.Offset), Value: value, Headers: h}
	return o
}

// annotate decodes, checks and annotates one bag. The decoded bag comes
// back with the error of a bag the model cannot take (it names the bag).
func (a *Annotator) annotate(ctx context.Context, sm *servedModel, in kafka.Message) (models.Annotation, models.Mode, *wire.BagMessage, error) {
	_, dspan := a.tracer.Start(ctx, "decode")
	bm, err := a.validator.DecodeBagHeaders(kafkaio.ContentType(in.Headers), kafkaio.SchemaVersion(in.Headers), in.Value)
	if err == nil {
		f := sm.meta.FeaturizerOrZero()
		err = admission.Target{Model: "model " + sm.meta.Version, Dim: sm.meta.Dim, Classes: sm.meta.Classes,
			Implicit: sm.meta.ImplicitClasses, Featurizer: &f}.Check(bm)
	}
	if err != nil {
		dspan.RecordError(err)
		dspan.SetStatus(codes.Error, "invalid bag")
	}
	dspan.End()
	if err != nil {
		return models.Annotation{}, "", bm, err
	}
	// A sparse bag stays sparse: the model, decoded by the kinds'
	// registry, densifies it itself when its kind has no sparse path.
	bag := bm.Bag()
	mode := models.Inductive
	if bag.Labeled() {
		mode = models.Transductive
	}
	ictx, ispan := a.tracer.Start(ctx, "infer", trace.WithAttributes(
		attribute.String("model.kind", sm.meta.Kind), attribute.String("mode", string(mode)), attribute.Int("instances", bag.Len())))
	defer ispan.End()
	var ann models.Annotation
	if sm.mapper != nil {
		ann, err = a.cache.annotate(ictx, sm.mapper, bag, sm.meta.Dim, mode)
	} else {
		ann, err = sm.model.Annotate(ictx, bag, mode)
	}
	if err != nil {
		ispan.RecordError(err)
		ispan.SetStatus(codes.Error, "annotate failed")
		return models.Annotation{}, mode, bm, fmt.Errorf("annotate bag %q: %w", bag.ID, err)
	}
	return ann, mode, bm, nil
}

// deadLetter encodes the dead letter of in within the output bound: the
// original whole when it fits, else its prefix, length and SHA-256 beside
// the topic, partition and offset where it still is.
func (a *Annotator) deadLetter(in kafka.Message, reason wire.Reason, err error) []byte {
	return wire.NewDeadLetter(wire.StageAnnotate, reason, err, string(in.Key), in.Topic, in.Partition, in.Offset, in.Value).Encode(int(a.maxOut.Load()))
}

func nonNilInts(v []int) []int {
	if v == nil {
		return []int{}
	}
	return v
}

func nonNilFloats(v []float64) []float64 {
	if v == nil {
		return []float64{}
	}
	return v
}

// Package status is the operator's status page of a running pipeline
// (mimlctl status): the model versions of the registry on a timeline with
// their aliases and metadata, the annotators' throughput and lag per
// partition (the topic's end offsets against the consumer group's
// committed offsets), the dead letters by reason (read from the
// dead-letter topic), and the retrainer's refit history (its /refits
// endpoint). A Collector polls these sources; a Handler serves the page,
// its JSON and its plots (SVG drawn by gonum/plot on the server), and the
// per-partition lag as Prometheus metrics.
package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/kafkaview"
	"github.com/mimlstream/mimlstream/internal/stream/quality"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// Registry is what the collector reads of the model registry
// (*featurestore.Registry).
type Registry interface {
	List(ctx context.Context) ([]featurestore.VersionMeta, error)
	Alias(ctx context.Context, alias string) (string, error)
}

var _ Registry = (*featurestore.Registry)(nil)

// Kafka is what the collector reads of the cluster (*kafkaview.View).
type Kafka interface {
	GroupLag(ctx context.Context, group, topic string) ([]kafkaview.PartitionLag, error)
	Read(ctx context.Context, topic string, o kafkaview.ReadOptions, fn func(kafka.Message) error) error
}

var _ Kafka = (*kafkaview.View)(nil)

// Config says where the collector looks.
type Config struct {
	Registry Registry
	Kafka    Kafka
	// Topics names the bags topic (whose lag is shown) and the
	// dead-letter topic (whose messages are counted by reason).
	Topics wire.Topics
	// Group is the annotators' consumer group.
	Group string
	// Retrainer is the base URL of the retrainer's HTTP listener (its
	// /refits); empty: no refit history.
	Retrainer string
	// Interval between polls (default 2 s); History is the number of
	// polls kept for the plots (default 300).
	Interval time.Duration
	History  int
	// Aliases are the registry aliases shown (default current, previous,
	// candidate).
	Aliases []string
	// Quality, when set, is the live quality store: per version over
	// time since LiveSince (default 6 h), and the shadow verdicts.
	Quality   Quality
	LiveSince time.Duration
	// MediaRoot is the folder the annotated photos and documents are read
	// from for the gallery (their media URIs are relative to it; documents
	// sent inline are found in its *.jsonl manifests by their SHA-256);
	// empty: the gallery lists the annotations without their media.
	// Gallery is how many of the latest media annotations it keeps
	// (default DefaultGallery), read from the annotations topic.
	MediaRoot string
	Gallery   int
	HTTP      *http.Client
	Log       *slog.Logger
}

// Model is one stored version with the aliases pointing at it.
type Model struct {
	featurestore.VersionMeta
	Aliases []string `json:"aliases"`
}

// Sample is one poll of the consumer group's position.
type Sample struct {
	At time.Time `json:"at"`
	// Lag per partition, in partition order.
	Lag []kafkaview.PartitionLag `json:"lag"`
	// Annotated and Produced are the rates (per second) since the
	// previous sample of the group's committed offsets and of the bags
	// topic's end offsets, summed over partitions; 0 in the first sample.
	Annotated float64 `json:"annotated_per_second"`
	Produced  float64 `json:"produced_per_second"`
}

// DeadLetters counts the dead-letter topic's messages read so far.
type DeadLetters struct {
	Total int64 `json:"total"`
	// ByReason counts the known reasons (wire.Reasons); others, and
	// messages that are not dead letters at all, count as "other", so the
	// set of names stays bounded whatever the topic holds.
	ByReason map[string]int64 `json:"by_reason"`
	ByStage  map[string]int64 `json:"by_stage"`
	// Last is the time of the newest dead letter read.
	Last *time.Time `json:"last,omitempty"`
}

// reasonOther is the bucket of unknown dead-letter reasons.
const reasonOther = "other"

// Refit is one refit of the retrainer, as its /refits endpoint serves it
// (retrain.RefitResult's JSON: the HTTP contract, not the Go type, is what
// the status page depends on).
type Refit struct {
	Version  string `json:"version,omitempty"`
	Parent   string `json:"parent,omitempty"`
	Promoted bool   `json:"promoted"`
	// Shadowed: published as the candidate, judged on live bags.
	Shadowed       bool               `json:"shadowed,omitempty"`
	Reason         string             `json:"reason"`
	TrainBags      int                `json:"train_bags"`
	HeldOutBags    int                `json:"held_out_bags"`
	Candidate      map[string]float64 `json:"candidate"`
	Current        map[string]float64 `json:"current,omitempty"`
	FitSeconds     float64            `json:"fit_time"`
	TrainingWindow string             `json:"training_window"`
	Pruned         []string           `json:"pruned,omitempty"`
}

// Snapshot is everything the page shows, as served on /api/status.
type Snapshot struct {
	// Seq counts the polls; the page redraws its plots when it changes.
	Seq        int64     `json:"seq"`
	At         time.Time `json:"at"`
	Group      string    `json:"group"`
	BagsTopic  string    `json:"bags_topic"`
	Models     []Model   `json:"models"`
	Current    string    `json:"current,omitempty"`
	Throughput *Sample   `json:"throughput,omitempty"`
	// LagTotal sums the last sample's lag over partitions.
	LagTotal    int64       `json:"lag_total"`
	DeadLetters DeadLetters `json:"dead_letters"`
	Refits      []Refit     `json:"refits"`
	// Live is the live quality of the versions scored on labeled bags,
	// Verdicts the latest shadow candidate decisions (newest first).
	Live     []LiveVersion     `json:"live"`
	Verdicts []quality.Verdict `json:"verdicts"`
	// Gallery holds the latest annotated photos and documents, newest
	// first.
	Gallery []GalleryItem `json:"gallery"`
	// Errors holds the last failure of each source ("registry", "kafka",
	// "dead-letters", "annotations", "retrainer") that has not recovered
	// since.
	Errors map[string]string `json:"errors,omitempty"`
}

// Collector polls the sources and keeps the latest state and a bounded
// history of samples.
type Collector struct {
	cfg Config
	gal *gallery

	mu      sync.Mutex
	seq     int64
	at      time.Time
	models  []Model
	current string
	samples []Sample
	dead    DeadLetters
	refits  []Refit
	live    []LiveVersion
	verdict []quality.Verdict
	errs    map[string]string
	ready   bool
}

// NewCollector checks the configuration and fills its defaults.
func NewCollector(cfg Config) (*Collector, error) {
	if cfg.Registry == nil || cfg.Kafka == nil {
		return nil, errors.New("status: a registry and a Kafka view are required")
	}
	if cfg.Topics.Annotate == "" || cfg.Topics.DeadLetter == "" || cfg.Group == "" {
		return nil, errors.New("status: the bags topic, the dead-letter topic and the annotators' group are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.History <= 0 {
		cfg.History = 300
	}
	if len(cfg.Aliases) == 0 {
		cfg.Aliases = featurestore.Aliases
	}
	if cfg.LiveSince <= 0 {
		cfg.LiveSince = 6 * time.Hour
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 5 * time.Second}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Collector{cfg: cfg, errs: map[string]string{}, gal: newGallery(cfg.MediaRoot, cfg.Gallery),
		dead: DeadLetters{ByReason: map[string]int64{}, ByStage: map[string]int64{}}}, nil
}

// Run polls every Interval and counts dead letters until ctx ends. A
// source that fails is reported in the snapshot's Errors and retried at
// the next poll; Run itself fails only if the dead-letter reader does
// something other than stop with ctx.
func (c *Collector) Run(ctx context.Context) error {
	dl := make(chan error, 2)
	go func() { dl <- c.follow(ctx, "dead-letters", c.cfg.Topics.DeadLetter, c.addDeadLetter) }()
	go func() {
		if c.cfg.Topics.Annotations == "" {
			dl <- nil
			return
		}
		dl <- c.follow(ctx, "annotations", c.cfg.Topics.Annotations, c.gal.add)
	}()
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		c.Poll(ctx)
		select {
		case <-ctx.Done():
			return errors.Join(<-dl, <-dl)
		case <-t.C:
		}
	}
}

// follow reads topic from its start and on, handing each message to add,
// retrying after a failure (the topic may not exist yet), which is
// reported as source's.
func (c *Collector) follow(ctx context.Context, source, topic string, add func([]byte)) error {
	for {
		err := c.cfg.Kafka.Read(ctx, topic, kafkaview.ReadOptions{Follow: true}, func(m kafka.Message) error {
			add(m.Value)
			return nil
		})
		if ctx.Err() != nil {
			return nil
		}
		c.setErr(source, err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(c.cfg.Interval):
		}
	}
}

// addDeadLetter counts a dead letter under its reason and stage when wire
// declares them, else under "other", to keep the counters bounded whatever
// the topic holds.
func (c *Collector) addDeadLetter(value []byte) {
	var d wire.DeadLetter
	reason, stage := reasonOther, reasonOther
	var at *time.Time
	if err := json.Unmarshal(value, &d); err == nil {
		if slices.Contains(wire.Reasons(), d.Reason) {
			reason = string(d.Reason)
		}
		if slices.Contains(wire.Stages(), d.Stage) {
			stage = d.Stage
		}
		if !d.At.IsZero() {
			at = &d.At
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead.Total++
	c.dead.ByReason[reason]++
	c.dead.ByStage[stage]++
	if at != nil && (c.dead.Last == nil || at.After(*c.dead.Last)) {
		c.dead.Last = at
	}
}

// Poll reads every source once and records a sample.
func (c *Collector) Poll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(c.cfg.Interval, 5*time.Second))
	defer cancel()
	var (
		wg                     sync.WaitGroup
		models                 []Model
		current                string
		lag                    []kafkaview.PartitionLag
		refits                 []Refit
		regErr, kafkaErr, rErr error
	)
	wg.Add(3)
	go func() {
		defer wg.Done()
		models, current, regErr = c.readRegistry(ctx)
	}()
	go func() {
		defer wg.Done()
		lag, kafkaErr = c.cfg.Kafka.GroupLag(ctx, c.cfg.Group, c.cfg.Topics.Annotate)
	}()
	go func() {
		defer wg.Done()
		if c.cfg.Retrainer != "" {
			refits, rErr = c.readRefits(ctx)
		}
	}()
	wg.Wait()
	now := time.Now()
	var (
		live     []LiveVersion
		verdicts []quality.Verdict
		qErr     error
	)
	if c.cfg.Quality != nil && regErr == nil {
		live, verdicts, qErr = c.readLive(ctx, models, now)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.at = now
	c.setErrLocked("registry", regErr)
	if regErr == nil {
		c.models, c.current = models, current
	}
	if c.cfg.Quality != nil && regErr == nil {
		c.setErrLocked("quality", qErr)
		if qErr == nil {
			c.live, c.verdict = live, verdicts
		}
	}
	c.setErrLocked("kafka", kafkaErr)
	if kafkaErr == nil {
		s := Sample{At: now, Lag: lag}
		if n := len(c.samples); n > 0 {
			prev := c.samples[n-1]
			if dt := now.Sub(prev.At).Seconds(); dt > 0 {
				s.Annotated = float64(max(committed(lag)-committed(prev.Lag), 0)) / dt
				s.Produced = float64(max(ends(lag)-ends(prev.Lag), 0)) / dt
			}
		}
		c.samples = append(c.samples, s)
		if len(c.samples) > c.cfg.History {
			c.samples = slices.Delete(c.samples, 0, len(c.samples)-c.cfg.History)
		}
	}
	if c.cfg.Retrainer != "" {
		c.setErrLocked("retrainer", rErr)
		if rErr == nil {
			c.refits = refits
		}
	}
	c.ready = c.ready || (regErr == nil && kafkaErr == nil)
}

// committed sums the committed offsets, counting a partition with none
// committed at its first offset, so the sum grows by the messages the
// group has processed.
func committed(lag []kafkaview.PartitionLag) int64 {
	var n int64
	for _, l := range lag {
		n += max(l.Committed, l.First)
	}
	return n
}

func ends(lag []kafkaview.PartitionLag) int64 {
	var n int64
	for _, l := range lag {
		n += l.End
	}
	return n
}

func (c *Collector) readRegistry(ctx context.Context) ([]Model, string, error) {
	metas, err := c.cfg.Registry.List(ctx)
	if err != nil {
		return nil, "", err
	}
	aliases := map[string][]string{}
	current := ""
	for _, a := range c.cfg.Aliases {
		v, err := c.cfg.Registry.Alias(ctx, a)
		if errors.Is(err, featurestore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		aliases[v] = append(aliases[v], a)
		if a == featurestore.AliasCurrent {
			current = v
		}
	}
	out := make([]Model, len(metas))
	for i, m := range metas {
		out[i] = Model{VersionMeta: m, Aliases: aliases[m.Version]}
		if out[i].Aliases == nil {
			out[i].Aliases = []string{}
		}
	}
	return out, current, nil
}

func (c *Collector) readRefits(ctx context.Context) ([]Refit, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.Retrainer+"/refits", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	var out []Refit
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL, err)
	}
	return out, nil
}

func (c *Collector) setErr(source string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setErrLocked(source, err)
}

func (c *Collector) setErrLocked(source string, err error) {
	if err == nil {
		delete(c.errs, source)
		return
	}
	if c.errs[source] != err.Error() {
		c.cfg.Log.Warn("status source failing", "source", source, "err", err)
	}
	c.errs[source] = err.Error()
}

// Ready reports whether a poll has read the registry and Kafka at least
// once.
func (c *Collector) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

// Snapshot returns the latest state; its slices and maps are copies.
func (c *Collector) Snapshot() Snapshot {
	// The gallery may read media files: not under the collector's lock.
	gal := c.gal.snapshot()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{Seq: c.seq, At: c.at, Group: c.cfg.Group, BagsTopic: c.cfg.Topics.Annotate,
		Models: slices.Clone(c.models), Current: c.current, Refits: slices.Clone(c.refits),
		Live: slices.Clone(c.live), Verdicts: slices.Clone(c.verdict),
		DeadLetters: DeadLetters{Total: c.dead.Total, ByReason: clone(c.dead.ByReason), ByStage: clone(c.dead.ByStage), Last: c.dead.Last}}
	if s.Models == nil {
		s.Models = []Model{}
	}
	if s.Refits == nil {
		s.Refits = []Refit{}
	}
	if s.Live == nil {
		s.Live = []LiveVersion{}
	}
	if s.Verdicts == nil {
		s.Verdicts = []quality.Verdict{}
	}
	s.Gallery = gal
	if n := len(c.samples); n > 0 {
		last := c.samples[n-1]
		last.Lag = slices.Clone(last.Lag)
		s.Throughput = &last
		for _, l := range last.Lag {
			s.LagTotal += l.Lag
		}
	}
	if len(c.errs) > 0 {
		s.Errors = clone(c.errs)
	}
	return s
}

// Samples returns a copy of the kept samples, oldest first.
func (c *Collector) Samples() []Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.samples)
}

func clone[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sources names the sources the collector reads.
func (c *Collector) sources() []string {
	s := []string{"registry", "kafka", "dead-letters"}
	if c.cfg.Topics.Annotations != "" {
		s = append(s, "annotations")
	}
	if c.cfg.Retrainer != "" {
		s = append(s, "retrainer")
	}
	if c.cfg.Quality != nil {
		s = append(s, "quality")
	}
	return s
}

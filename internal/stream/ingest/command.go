package service

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/stream"
)

// ingestFlags are the settings of the ingest service.
type ingestFlags struct {
	kf                  kafkaFlags
	tf                  telemetryFlags
	data, jsonl, listen string
	labelFraction, rate float64
	seed                int64
	withInstanceLabels  bool
	maxBytes, batch     int
	limit               int
	progress            bool
}

// RunIngest publishes bags from a dataset file, from wire-format JSON lines
// (a file or standard input), or from HTTP POSTs, and prints a summary.
func RunIngest(ctx context.Context, env Env, args []string) error {
	fs := cli.NewFlagSet("ingest", `Usage: ingest --brokers HOST:PORT (--data PATH | --jsonl PATH|- | --listen ADDR) [flags]

Validates bags and publishes them to the annotate topic; bags that keep their
labels (--label-fraction of the labeled ones) also go to the training topic.
--data reads any dataset format (.mat, .arff, .data, .jsonl, .csv);
--jsonl reads wire-format bag messages (schemas/bag.schema.json), one per line,
from a file or "-" for standard input; --listen serves POST /bags (one bag or
JSON lines) until stopped. Invalid bags go to the dead-letter topic.`, env.Stderr)
	var f ingestFlags
	f.kf.register(fs)
	f.tf.register(fs)
	fs.StringVar(&f.data, "data", "", "dataset `file` to publish")
	fs.StringVar(&f.jsonl, "jsonl", "", "wire-format JSON lines `file` (- for standard input)")
	fs.StringVar(&f.listen, "listen", "", "serve POST /bags on this `address`")
	fs.Float64Var(&f.labelFraction, "label-fraction", 1, "fraction of the labeled bags that keep their labels (the rest are published unlabeled)")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the label-fraction choice")
	fs.BoolVar(&f.withInstanceLabels, "with-instance-labels", false, "publish ground-truth instance labels (held back by default)")
	fs.IntVar(&f.maxBytes, "max-message-bytes", 1<<20, "reject bags whose message is larger (0: no limit)")
	fs.IntVar(&f.batch, "batch", 256, "bags per produce batch")
	fs.Float64Var(&f.rate, "rate", 0, "publish at most this many bags per second (0: as fast as acknowledged)")
	fs.IntVar(&f.limit, "limit", 0, "publish at most this many bags of --data (0: all)")
	fs.BoolVar(&f.progress, "progress", true, "show a progress bar for files")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := f.kf.check(); err != nil {
		return err
	}
	n := 0
	for _, s := range []string{f.data, f.jsonl, f.listen} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return errors.New("give exactly one of --data, --jsonl and --listen")
	}
	log, prov, stop, err := start(ctx, env, "ingest", &f.kf, &f.tf)
	if err != nil {
		return err
	}
	defer stop()
	pub, err := stream.NewPublisher(stream.PublisherConfig{Brokers: f.kf.brokers, Topics: f.kf.topics, LabelFraction: f.labelFraction,
		Seed: f.seed, WithInstanceLabels: f.withInstanceLabels, MaxMessageBytes: f.maxBytes, Obs: observability(prov, log)})
	if err != nil {
		return err
	}
	defer pub.Close()
	start := time.Now()
	switch {
	case f.data != "":
		err = ingestDataset(ctx, env, pub, f)
	case f.jsonl != "":
		err = ingestJSONL(ctx, env, pub, f)
	default:
		err = serveIngest(ctx, pub, f.listen, f.maxBytes, log)
	}
	printSummary(env.Stdout, pub.Stats(), time.Since(start))
	return err
}

func printSummary(w io.Writer, s stream.IngestStats, d time.Duration) {
	rej := 0
	for _, n := range s.Rejected {
		rej += n
	}
	fmt.Fprintf(w, "ingest: published %d bags (%d labeled, also to the training topic), rejected %d, in %v (%.0f bags/s)\n",
		s.Published, s.Labeled, rej, d.Round(time.Millisecond), float64(s.Published)/max(d.Seconds(), 1e-9))
	reasons := make([]string, 0, len(s.Rejected))
	for r := range s.Rejected {
		reasons = append(reasons, string(r))
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "  rejected %-20s %d\n", r, s.Rejected[stream.Reason(r)])
	}
}

// pacer spaces batches so the average rate stays at most rate bags/s.
type pacer struct {
	rate  float64
	start time.Time
	sent  int
}

func (p *pacer) wait(ctx context.Context, n int) error {
	p.sent += n
	if p.rate <= 0 {
		return nil
	}
	due := p.start.Add(time.Duration(float64(p.sent) / p.rate * float64(time.Second)))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(due)):
		return nil
	}
}

func ingestDataset(ctx context.Context, env Env, pub *stream.Publisher, f ingestFlags) error {
	ds, err := dataset.Load(f.data)
	if err != nil {
		return err
	}
	bags := ds.Bags
	if f.limit > 0 && f.limit < len(bags) {
		bags = bags[:f.limit]
	}
	bar := newBar(env, f.progress, len(bags), "publishing "+ds.Name)
	p := &pacer{rate: f.rate, start: time.Now()}
	batch := max(1, f.batch)
	if f.rate > 0 {
		// Small batches keep a paced stream smooth.
		batch = max(1, min(batch, int(f.rate/10)))
	}
	for i := 0; i < len(bags); i += batch {
		j := min(i+batch, len(bags))
		if _, err := pub.PublishDataset(ctx, ds, bags[i:j]); err != nil {
			return err
		}
		_ = bar.Add(j - i)
		if err := p.wait(ctx, j-i); err != nil {
			return err
		}
	}
	_ = bar.Finish()
	return nil
}

func newBar(env Env, show bool, n int, what string) *progressbar.ProgressBar {
	if !show {
		return progressbar.DefaultSilent(int64(n), what)
	}
	return progressbar.NewOptions(n, progressbar.OptionSetWriter(env.Stderr), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("bags"),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionOnCompletion(func() { fmt.Fprintln(env.Stderr) }))
}

func ingestJSONL(ctx context.Context, env Env, pub *stream.Publisher, f ingestFlags) error {
	var r io.Reader = os.Stdin
	if env.Stdin != nil {
		r = env.Stdin
	}
	show := false
	total := -1
	if f.jsonl != "-" {
		fh, err := os.Open(f.jsonl)
		if err != nil {
			return err
		}
		defer fh.Close()
		r = fh
		if st, err := fh.Stat(); err == nil {
			total = int(st.Size())
			show = f.progress
		}
	}
	var bar *progressbar.ProgressBar
	if show {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(env.Stderr), progressbar.OptionSetDescription("publishing "+f.jsonl),
			progressbar.OptionShowBytes(true), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionOnCompletion(func() { fmt.Fprintln(env.Stderr) }))
	} else {
		bar = progressbar.DefaultBytesSilent(-1, "")
	}
	sc := bufio.NewScanner(r)
	// A line longer than the message limit is still read whole, so it is
	// rejected as oversize rather than breaking the scan.
	sc.Buffer(make([]byte, 0, 1<<20), max(f.maxBytes*2, 64<<20))
	p := &pacer{rate: f.rate, start: time.Now()}
	var pending [][]byte
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		if _, err := pub.PublishRaw(ctx, pending); err != nil {
			return err
		}
		if err := p.wait(ctx, len(pending)); err != nil {
			return err
		}
		pending = pending[:0]
		return nil
	}
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		_ = bar.Add(len(sc.Bytes()) + 1)
		if len(line) == 0 {
			continue
		}
		pending = append(pending, append([]byte(nil), line...))
		if len(pending) >= max(1, f.batch) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", f.jsonl, err)
	}
	if err := flush(); err != nil {
		return err
	}
	_ = bar.Finish()
	return nil
}

// ingestResponse is the reply to POST /bags.
type ingestResponse struct {
	Accepted int                `json:"accepted"`
	Rejected []stream.Rejection `json:"rejected"`
}

// IngestHandler serves POST /bags: the body is one bag or JSON lines of bags
// (wire format). It answers 200 when all were published, 422 when some were
// rejected (the others are published), with the rejections in the body.
func IngestHandler(pub *stream.Publisher, maxBytes int) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("POST /bags", func(w http.ResponseWriter, r *http.Request) {
		limit := int64(64 << 20)
		if maxBytes > 0 {
			limit = int64(maxBytes) * 1024 // a body may hold many bags
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		var raws [][]byte
		for line := range bytes.SplitSeq(body, []byte("\n")) {
			if line = bytes.TrimSpace(line); len(line) > 0 {
				raws = append(raws, line)
			}
		}
		if len(raws) == 0 {
			http.Error(w, "empty body", http.StatusBadRequest)
			return
		}
		rej, err := pub.PublishRaw(r.Context(), raws)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		resp := ingestResponse{Accepted: len(raws) - len(rej), Rejected: rej}
		if resp.Rejected == nil {
			resp.Rejected = []stream.Rejection{}
		}
		w.Header().Set("Content-Type", "application/json")
		if len(rej) > 0 {
			w.WriteHeader(http.StatusUnprocessableEntity)
		}
		_ = json.NewEncoder(w).Encode(resp)
	})
	return mux
}

func serveIngest(ctx context.Context, pub *stream.Publisher, addr string, maxBytes int, log *slog.Logger) error {
	stop, err := serveHTTP(addr, IngestHandler(pub, maxBytes), log)
	if err != nil {
		return err
	}
	<-ctx.Done()
	stop()
	return nil
}

package ingest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mimlstream/mimlstream/internal/httpguard"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// HTTPConfig bounds what one client of POST /bags can make the service
// hold and how long.
type HTTPConfig struct {
	// Tokens, when not nil, are the bearer tokens POST /bags accepts.
	Tokens *httpguard.Tokens
	// MaxLineBytes bounds one line of a body: a longer line is skipped
	// without being buffered and rejected as oversize, its dead letter
	// holding its first bytes, size and SHA-256. It must be > 0.
	MaxLineBytes int
	// MaxBodyBytes bounds a whole body; reading stops beyond it and the
	// answer is 413 with the lines processed so far. 0: no total limit
	// (memory is still bounded: see maxBatchBytes and maxRejectedLines).
	MaxBodyBytes int64
	// Batch is the number of lines published together.
	Batch int
	// MaxConcurrent bounds the requests in flight; beyond it the answer is
	// 503 with Retry-After. <= 0: no bound.
	MaxConcurrent int
	// MinBodyRate is the slowest a body may be sent, in bytes a second on
	// average, once MinBodyRateGrace has passed (httpguard.MinRate): a
	// slower one is cut off (400), so a few trickling clients cannot hold
	// every MaxConcurrent slot until the read timeout. <= 0: no minimum.
	MinBodyRate      int64
	MinBodyRateGrace time.Duration
	// Metrics, when not nil, is served on GET /metrics, open to scrapers
	// like /healthz.
	Metrics http.Handler
	// Ready, when not nil, answers GET /readyz: nil means the publisher can
	// reach Kafka (200), an error that it cannot (503 with the error), so
	// a load balancer stops sending bags that could only be refused.
	Ready func(ctx context.Context) error
}

// maxBatchBytes bounds the lines held for one produce request, besides
// HTTPConfig.Batch, and those of a request's batches in flight together:
// with MaxLineBytes, it is what bounds a request's memory for the body.
const maxBatchBytes = 4 << 20

// maxRejectedLines bounds the rejected lines reported in one answer: a body
// of garbage is not read to its end to build an answer of unbounded size.
// Processing stops after that many, and the answer says from which line
// the client must resend.
const maxRejectedLines = 1000

// retryAfter is the Retry-After of the 503 answers.
const retryAfter = time.Second

// BagsResult is the answer to POST /bags (schemas/ingest-response.schema.json):
// what happened to each line of the body, so that a client resends only
// what failed. Lines are numbered from 1, blank lines included.
type BagsResult struct {
	// Accepted is the number of bags published, AcceptedIDs their ids in
	// body order.
	Accepted    int      `json:"accepted"`
	AcceptedIDs []string `json:"accepted_ids"`
	// Rejected are the lines refused, with why; retrying them unchanged
	// cannot succeed.
	Rejected []LineRejection `json:"rejected"`
	// Lines is the number of lines read.
	Lines int `json:"lines"`
	// Complete says whether every line of the body was processed. When
	// not, NextLine is the first line not processed (lines from it on may
	// or may not have been published: resend them; consumers deduplicate
	// by bag id) and Error says why processing stopped.
	Complete bool   `json:"complete"`
	NextLine int    `json:"next_line,omitempty"`
	Error    string `json:"error,omitempty"`
}

// LineRejection is a line that was not published.
type LineRejection struct {
	Line   int         `json:"line"`
	Reason wire.Reason `json:"reason"`
	Error  string      `json:"error"`
}

// ids holds the accepted bag ids in one byte slice (one allocation per
// growth, not one per id), so a large body's answer stays compact.
type ids struct {
	buf  []byte
	ends []int
}

func (s *ids) add(id string) {
	s.buf = append(s.buf, id...)
	s.ends = append(s.ends, len(s.buf))
}

func (s *ids) each(f func(string)) {
	start := 0
	for _, e := range s.ends {
		f(string(s.buf[start:e]))
		start = e
	}
}

// bagsHandler serves POST /bags.
type bagsHandler struct {
	pub *Publisher
	cfg HTTPConfig
	log *slog.Logger
}

// Handler returns the ingest endpoint: POST /bags, guarded by the tokens
// and the concurrency bound, and GET /healthz, (with cfg.Ready) GET /readyz
// and (with cfg.Metrics) GET /metrics, open to probes and scrapers.
func Handler(pub *Publisher, cfg HTTPConfig, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.Batch = max(1, cfg.Batch)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	if cfg.Ready != nil {
		mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
			if err := cfg.Ready(r.Context()); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
	}
	bags := httpguard.LimitConcurrency(cfg.MaxConcurrent, retryAfter, &bagsHandler{pub: pub, cfg: cfg, log: log})
	mux.Handle("POST /bags", httpguard.RequireBearer(cfg.Tokens, bags))
	// Photos, one a request, behind the same tokens and bound.
	photos := httpguard.LimitConcurrency(cfg.MaxConcurrent, retryAfter, &mediaHandler{pub: pub, cfg: cfg, log: log, f: imagefeat.Default(), tf: defaultTextFeaturizer()})
	mux.Handle("POST /media", httpguard.RequireBearer(cfg.Tokens, photos))
	return mux
}

// ServeHTTP reads the body line by line, publishes the lines in batches and
// answers with a BagsResult:
//
//	200  every line published
//	422  some lines rejected (the others published); or, with complete
//	     false, more than maxRejectedLines rejected and processing stopped
//	413  the body exceeds MaxBodyBytes (lines before the limit processed)
//	400  an empty body, or the body could not be read to its end
//	415  a content type other than JSON's (nothing read)
//	503  publishing failed (Kafka unavailable): resend from next_line
func (h *bagsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res := &BagsResult{Rejected: []LineRejection{}}
	var accepted ids
	if h.cfg.MaxBodyBytes > 0 && r.ContentLength > h.cfg.MaxBodyBytes {
		res.NextLine = 1
		res.Error = fmt.Sprintf("body of %d bytes exceeds the %d-byte limit", r.ContentLength, h.cfg.MaxBodyBytes)
		// The client may still be sending: do not read the rest.
		w.Header().Set("Connection", "close")
		h.write(w, http.StatusRequestEntityTooLarge, res, &accepted)
		return
	}
	if err := checkBodyType(r.Header.Get("Content-Type")); err != nil {
		res.NextLine = 1
		res.Error = err.Error()
		w.Header().Set("Connection", "close")
		h.write(w, http.StatusUnsupportedMediaType, res, &accepted)
		return
	}
	body := httpguard.MinRate(w, r.Body, h.cfg.MinBodyRate, h.cfg.MinBodyRateGrace)
	status := h.process(r.Context(), body, res, &accepted)
	if status == http.StatusRequestEntityTooLarge || status == http.StatusBadRequest && !res.Complete {
		w.Header().Set("Connection", "close")
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
	}
	h.write(w, status, res, &accepted)
}

// bodyTypes are the content types POST /bags reads: JSON, one document or
// lines (the body itself tells which: see opensDocument).
var bodyTypes = []string{"application/json", "application/x-ndjson", "application/jsonl"}

// checkBodyType refuses a body that says it is not JSON (the binary
// encoding, text/plain, a form: curl's default) rather than reading it as
// JSON and blaming each line. No content type is read as JSON.
func checkBodyType(ct string) error {
	if ct == "" {
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Errorf("content type %q: %w", ct, err)
	}
	if !slices.Contains(bodyTypes, mt) {
		return fmt.Errorf("content type %q: POST /bags takes JSON bags (%s), one document or one per line", mt, strings.Join(bodyTypes, ", "))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fmt.Errorf("content type %q: charset %q, want utf-8", ct, cs)
	}
	return nil
}

// opensDocument reports whether the first non-blank line of a body opens
// a JSON object it does not close: the body is then one JSON document (a
// pretty-printed bag) rather than JSON lines, each of which is a whole
// object. The first line alone decides, so no body is read both ways.
func opensDocument(first []byte) bool {
	return first[0] == '{' && !json.Valid(first)
}

// document accumulates a body read as one JSON document: whole while
// within the line limit, and always its size, SHA-256, first bytes and
// newlines, for the dead letter of one beyond it.
type document struct {
	buf    []byte
	max    int
	size   int
	lines  int
	h      hash.Hash
	prefix []byte
	// partial: the bytes since the last newline, a last line without one.
	partial bool
}

func newDocument(first []byte, max int) *document {
	d := &document{max: max, h: sha256.New()}
	_, _ = d.Write(first)
	_, _ = d.Write([]byte("\n"))
	d.lines = 0 // the first line is counted by the caller
	return d
}

func (d *document) Write(b []byte) (int, error) {
	d.size += len(b)
	_, _ = d.h.Write(b)
	if d.size <= d.max {
		d.buf = append(d.buf, b...)
	} else {
		d.buf = nil
	}
	if n := min(len(b), httpguard.SkippedPrefix-len(d.prefix)); n > 0 {
		d.prefix = append(d.prefix, b[:n]...)
	}
	if len(b) > 0 {
		d.lines += bytes.Count(b, []byte("\n"))
		d.partial = b[len(b)-1] != '\n'
	}
	return len(b), nil
}

// skipped describes the document beyond the limit for its dead letter.
func (d *document) skipped() httpguard.Skipped {
	var s httpguard.Skipped
	s.Prefix, s.Size = d.prefix, int64(d.size)
	d.h.Sum(s.SHA256[:0])
	return s
}

func (h *bagsHandler) publishFailed(res *BagsResult, err error) int {
	h.log.Warn("POST /bags: publish failed", "err", err, "next_line", res.NextLine)
	res.Complete = false
	res.Error = "publish failed: " + err.Error()
	return http.StatusServiceUnavailable
}

// write sends res as JSON, the accepted ids streamed from their compact
// form rather than built into one large value.
func (h *bagsHandler) write(w http.ResponseWriter, status int, res *BagsResult, accepted *ids) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	head := *res
	head.AcceptedIDs = []string{}
	obj, err := json.Marshal(head)
	if err != nil {
		h.log.Error("encode answer", "err", err)
		return
	}
	// The ids go between the brackets of the empty list.
	const slot = `"accepted_ids":[`
	before, after, _ := bytes.Cut(obj, []byte(slot))
	bw := bufio.NewWriterSize(w, 32<<10)
	_, _ = bw.Write(before)
	_, _ = bw.WriteString(slot)
	first := true
	accepted.each(func(id string) {
		if !first {
			_ = bw.WriteByte(',')
		}
		first = false
		q, _ := json.Marshal(id)
		_, _ = bw.Write(q)
	})
	_, _ = bw.Write(after) // "]" and the rest
	_ = bw.WriteByte('\n')
	_ = bw.Flush()
}
